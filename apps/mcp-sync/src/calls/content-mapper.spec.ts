import { errorText, toFuncReturn } from './content-mapper';

describe('content mapping', () => {
  it('joins text, keeps structuredContent as JSON, and types media parts', () => {
    expect(
      toFuncReturn({
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      }),
    ).toBe('a\nb');
    expect(toFuncReturn({ content: [{ type: 'text', text: '{"n":1}' }], structuredContent: { n: 1 } })).toEqual({
      n: 1,
    });
    expect(toFuncReturn({ content: [] })).toBe('');
    const mixed = toFuncReturn({
      content: [
        { type: 'text', text: 'see' },
        { type: 'image', data: 'iVBOR', mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'file:///a.txt', mimeType: 'text/plain', text: 'hello' } },
        { type: 'resource_link', uri: 'file:///b', name: 'b' },
      ],
      structuredContent: { ok: true },
    });
    expect(mixed).toEqual({
      text: 'see',
      content: [
        { type: 'text', text: 'see' },
        { type: 'image', mime_type: 'image/png', data: 'iVBOR' },
        { type: 'resource', uri: 'file:///a.txt', mime_type: 'text/plain', text: 'hello' },
        { type: 'resource_link', uri: 'file:///b', name: 'b', mime_type: null },
      ],
      structured_content: { ok: true },
    });
  });

  it("takes an error's text from the server, with a fallback", () => {
    expect(errorText({ content: [{ type: 'text', text: 'boom' }], isError: true })).toBe('boom');
    expect(errorText({ content: [], isError: true })).toMatch(/without a message/);
  });
});
