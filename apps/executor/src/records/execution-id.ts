import { randomBytes } from 'node:crypto';

/**
 * Execution ids are `exec-<UUIDv7>` (RFC 9562): the first 48 bits are the Unix time in ms at which
 * the id was handed out. Any replica can so tell a record still on its way (a sync call's record is
 * written behind its answer, by the replica that ran it) from one that never existed, without
 * asking anyone: executions.get waits for the first, and answers the second at once. Ids made
 * before this (UUIDv4) read as having no time, which is what they are: long written.
 *
 * Time-ordered ids also keep inserts into the records' primary key at its right edge.
 */
export function newExecutionId(now = Date.now()): string {
  const b = randomBytes(16);
  b.writeUIntBE(now, 0, 6);
  b[6] = (b[6]! & 0x0f) | 0x70; // version 7
  b[8] = (b[8]! & 0x3f) | 0x80; // RFC 9562 variant
  const h = b.toString('hex');
  return `exec-${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** When a UUIDv7 execution id was handed out (epoch ms); undefined for any other id. */
export function issuedAt(executionId: string): number | undefined {
  const m = /^exec-([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.exec(executionId);
  return m ? Number.parseInt(m[1]! + m[2]!, 16) : undefined;
}
