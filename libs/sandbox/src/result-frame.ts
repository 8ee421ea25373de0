/** The one line the harness writes on the result channel (fd 3). See python/harness.py. */
export type ResultFrame = { status: 'success'; value: unknown } | { status: 'error'; type: string; message: string };

export type FrameParse = { ok: true; frame: ResultFrame } | { ok: false; reason: string };

/**
 * Accepts exactly one newline-terminated JSON frame carrying `nonce`; anything else (nothing,
 * garbage, two frames, a foreign nonce) is rejected with a reason.
 */
export function parseResultFrame(raw: Buffer, nonce: string): FrameParse {
  if (raw.length === 0) return { ok: false, reason: 'no result frame' };
  const text = raw.toString('utf8');
  const body = text.endsWith('\n') ? text.slice(0, -1) : undefined;
  if (body === undefined || body.includes('\n'))
    return { ok: false, reason: 'the result channel must carry exactly one frame' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { ok: false, reason: 'the result frame is not JSON' };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return { ok: false, reason: 'the result frame is not an object' };
  const f = parsed as Record<string, unknown>;
  if (f.v !== 1) return { ok: false, reason: 'unknown result frame version' };
  if (f.nonce !== nonce) return { ok: false, reason: "the result frame does not carry this run's nonce" };
  if (f.status === 'success' && 'value' in f) return { ok: true, frame: { status: 'success', value: f.value } };
  if (f.status === 'error' && typeof f.type === 'string' && typeof f.message === 'string') {
    return { ok: true, frame: { status: 'error', type: f.type, message: f.message } };
  }
  return { ok: false, reason: 'malformed result frame' };
}
