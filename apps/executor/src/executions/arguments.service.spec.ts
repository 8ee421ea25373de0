import type { Tool } from '@toolplane/contracts';
import { ArgumentsService } from './arguments.service';

const tool = (parameters: Record<string, unknown>): Tool =>
  ({
    id: 'tool-00000000-0000-0000-0000-000000000001',
    name: 't',
    json_schema: { name: 't', parameters },
  }) as unknown as Tool;

describe('ArgumentsService', () => {
  const sut = new ArgumentsService();
  const add = tool({ type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a'] });

  it('accepts arguments that match', () => {
    expect(() => sut.check('org-a', add, { a: 1 })).not.toThrow();
    expect(() => sut.check('org-a', add, { a: 1, b: 2 })).not.toThrow();
  });

  it('refuses missing, mistyped and unknown arguments with INVALID_ARGUMENTS details', () => {
    expect(() => sut.check('org-a', add, {})).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENTS' }));
    expect(() => sut.check('org-a', add, { a: 1.5 })).toThrow(/a: must be integer/);
    expect(() => sut.check('org-a', add, { a: 1, zzz: true })).toThrow(/unknown argument 'zzz'/);
  });

  it('honours an explicit additionalProperties: true', () => {
    expect(() =>
      sut.check('org-a', tool({ type: 'object', properties: {}, additionalProperties: true }), { anything: 1 }),
    ).not.toThrow();
  });

  it('answers SCHEMA_INVALID for a schema that cannot be compiled', () => {
    expect(() => sut.check('org-a', tool({ type: 'object', properties: { a: { type: 'no-such-type' } } }), {})).toThrow(
      expect.objectContaining({ code: 'SCHEMA_INVALID' }),
    );
  });
});
