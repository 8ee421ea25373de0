import type { SecretMasker } from '@toolplane/platform';

/**
 * Keeps the first `limit` bytes of a stream and counts the rest, so the writer can be drained
 * without bound while memory stays bounded.
 */
export class OutputCapture {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  /** Every byte seen, kept or not. */
  total = 0;
  truncated = false;

  constructor(private readonly limit: number) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    const room = this.limit - this.kept;
    if (chunk.length <= room) {
      this.chunks.push(chunk);
      this.kept += chunk.length;
      return;
    }
    this.truncated = true;
    if (room > 0) {
      this.chunks.push(Buffer.from(chunk.subarray(0, room))); // copy: do not pin the whole chunk
      this.kept += room;
    }
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks, this.kept);
  }

  /**
   * UTF-8 text of the first `limit` bytes, masked first when a masker is given: the capture must
   * then have been made `masker.lookaheadBytes` longer than `limit` (see SecretMasker.maskedPrefix).
   */
  maskedText(limit: number, masker: SecretMasker): { text: string; truncated: boolean } {
    const bytes = this.bytes();
    const text = new TextDecoder('utf-8').decode(this.truncated ? bytes.subarray(0, completeUtf8Length(bytes)) : bytes);
    return masker.maskedPrefix(text, limit, this.truncated);
  }

  /** UTF-8 text; invalid bytes become U+FFFD and a character cut by the limit is dropped whole. */
  text(): string {
    const bytes = this.bytes();
    return new TextDecoder('utf-8').decode(this.truncated ? bytes.subarray(0, completeUtf8Length(bytes)) : bytes);
  }
}

/** Length of `bytes` without a trailing incomplete UTF-8 sequence. */
export function completeUtf8Length(bytes: Uint8Array): number {
  const end = bytes.length;
  for (let i = end - 1; i >= 0 && i >= end - 4; i--) {
    const b = bytes[i]!;
    if ((b & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead byte
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return end - i < need ? i : end;
  }
  return end;
}
