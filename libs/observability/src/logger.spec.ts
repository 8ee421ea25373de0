import { Writable } from 'node:stream';
import { ToolplaneLogger } from './logger';

function sink(): { out: Writable; lines: string[] } {
  const lines: string[] = [];
  const out = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { out, lines };
}

describe('ToolplaneLogger', () => {
  it("logs an error's message, never what it wraps (its cause) or its stack", () => {
    const { out, lines } = sink();
    const sut = new ToolplaneLogger('test', 'json', 'info', out);
    const err = new Error('the provider is unreachable', {
      cause: new Error('GET https://api.example.com/?token=sk-live-123 failed'),
    });
    sut.error(err, 'Ctx');
    sut.warn({ note: 'an object', err }, 'Ctx');
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'error', context: 'Ctx', msg: 'the provider is unreachable' });
    expect(lines.join('')).not.toContain('sk-live-123');
    expect(lines.join('')).not.toContain('at ');
  });
});
