export interface EventuallyOptions {
  /** How long to keep trying (default 10 s: generous, for slow CI machines). */
  timeoutMs?: number;
  /** Pause between tries (default 25 ms). */
  intervalMs?: number;
}

/**
 * Runs `check` until it stops throwing (or returns true) and answers its value; past the
 * deadline, fails with the last error. A test waits for a state, never for a fixed time.
 */
export async function expectEventually<T>(
  check: () => T | Promise<T>,
  opts: EventuallyOptions = {},
): Promise<Exclude<T, false>> {
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== false) return value as Exclude<T, false>;
      last = new Error('the condition was still false');
    } catch (e) {
      last = e;
    }
    if (Date.now() >= deadline) {
      if (last instanceof Error) last.message = `not within ${opts.timeoutMs ?? 10_000} ms: ${last.message}`;
      throw last;
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 25));
  }
}

/** A promise the test settles when it chooses: race windows made explicit instead of timed. */
export function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (e: unknown) => void } {
  let resolve!: (value: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
