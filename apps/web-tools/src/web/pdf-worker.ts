import { extractText, getDocumentProxy, getMeta } from 'unpdf';
import { parentPort, workerData } from 'node:worker_threads';

/**
 * One PDF → its text and what its info dictionary says of it, in a worker thread of its own
 * (pdf-text.ts bounds it in time and heap). pdf.js 5 never turns a font program into JavaScript
 * (the eval path of CVE-2024-4367 is gone); fonts are not loaded and images not decoded here.
 */
async function main(): Promise<void> {
  const pdf = await getDocumentProxy(new Uint8Array(workerData as Uint8Array), {
    verbosity: 0,
    disableFontFace: true,
    maxImageSize: 0,
  });
  const info = ((await getMeta(pdf).catch(() => ({ info: {} }))).info ?? {}) as Record<string, unknown>;
  const { totalPages, text } = await extractText(pdf, { mergePages: true });
  const str = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim().slice(0, 500) : undefined);
  parentPort!.postMessage({
    result: {
      title: str(info.Title),
      author: str(info.Author),
      published: str(info.CreationDate),
      pages: totalPages,
      text,
    },
  });
}

main().catch((e: unknown) => parentPort!.postMessage({ error: String((e as Error)?.message ?? e).slice(0, 300) }));
