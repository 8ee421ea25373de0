import { UsageError } from './cli.errors';

/**
 * A secret value from stdin (piped), or typed at a prompt without echo (a terminal): never from
 * argv, where `ps` and shell history would keep it. One trailing newline is dropped.
 */
export async function readSecret(label: string): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    const chunks: Buffer[] = [];
    for await (const c of stdin) chunks.push(c as Buffer);
    const value = Buffer.concat(chunks)
      .toString('utf8')
      .replace(/\r?\n$/, '');
    if (!value) throw new UsageError(`no ${label} on stdin`);
    return value;
  }
  // No echo before the prompt shows: whatever is typed (or pasted) after it never reaches the screen.
  stdin.setRawMode(true);
  process.stderr.write(`${label}: `);
  stdin.resume();
  return new Promise((resolve, reject) => {
    let value = '';
    const done = (err?: Error) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (buf: Buffer) => {
      for (const ch of buf.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return done(value ? undefined : new UsageError(`no ${label}`));
        if (ch === '\u0003') return done(new UsageError('cancelled'));
        if (ch === '\u007f') value = value.slice(0, -1);
        else value += ch;
      }
    };
    stdin.on('data', onData);
  });
}
