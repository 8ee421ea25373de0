import { EXECUTION_ID } from '@toolplane/contracts';
import { issuedAt, newExecutionId } from './execution-id';

describe('execution ids (UUIDv7)', () => {
  it('are ids of the public contract that tell when they were handed out, to the millisecond', () => {
    const at = Date.UTC(2026, 10, 29, 7, 30, 0, 123);
    const id = newExecutionId(at);
    expect(id).toMatch(EXECUTION_ID);
    expect(id[19]).toBe('7'); // version
    expect('89ab').toContain(id[24]); // variant
    expect(issuedAt(id)).toBe(at);
    const before = Date.now();
    expect(issuedAt(newExecutionId())).toBeGreaterThanOrEqual(before);
  });

  it('are unique, and sort by the time they were handed out', () => {
    const ids = Array.from({ length: 2000 }, (_, i) => newExecutionId(1_700_000_000_000 + Math.floor(i / 10)));
    expect(new Set(ids).size).toBe(ids.length);
    const byTime = [...ids].sort((a, b) => issuedAt(a)! - issuedAt(b)!);
    expect(byTime.map((id) => id.slice(0, 18))).toEqual([...ids].sort().map((id) => id.slice(0, 18)));
  });

  it('read no time from ids that carry none (UUIDv4, made before) or from anything else', () => {
    expect(issuedAt('exec-3b241101-e2bb-4255-8caf-4136c566a962')).toBeUndefined();
    expect(issuedAt('exec-0190a3c4-5e6f-7abc-cdef-0123456789ab')).toBeUndefined(); // variant bits not RFC 9562
    expect(issuedAt('0190a3c4-5e6f-7abc-8def-0123456789ab')).toBeUndefined();
    expect(issuedAt('exec-0190a3c4-5e6f-7abc-8def-0123456789ab')).toBe(0x0190a3c45e6f);
  });
});
