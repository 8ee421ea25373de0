import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';

export interface PdfText {
  title?: string;
  author?: string;
  published?: string;
  pages: number;
  text: string;
}

/**
 * The text of a PDF, read by pdf.js (unpdf) in a worker thread that is ended at `timeoutMs` and
 * capped at `heapMb`: a hostile file costs its own call, never the service. A file pdf.js cannot
 * read is a typed FETCH_FAILED naming why, never its content.
 */
export function pdfText(bytes: Uint8Array, timeoutMs: number, heapMb = 256): Promise<PdfText> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(join(__dirname, 'pdf-worker.js'), {
      workerData: bytes,
      resourceLimits: { maxOldGenerationSizeMb: heapMb },
      stdout: true,
      stderr: true,
    });
    let settled = false;
    const done = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      fn();
    };
    const timer = setTimeout(
      () =>
        done(() =>
          reject(
            new ToolplaneError(ErrorCode.FETCH_TIMEOUT, `The PDF was not read within ${timeoutMs} ms`, {
              timeout_ms: timeoutMs,
            }),
          ),
        ),
      timeoutMs,
    );
    worker.once('message', (m: { result?: PdfText; error?: string }) =>
      done(() =>
        m.result
          ? resolve(m.result)
          : reject(
              new ToolplaneError(
                ErrorCode.FETCH_FAILED,
                `The PDF could not be read: ${m.error ?? 'unknown error'}`,
                undefined,
                false,
              ),
            ),
      ),
    );
    worker.once('error', (e) =>
      done(() =>
        reject(
          new ToolplaneError(
            ErrorCode.FETCH_FAILED,
            `The PDF could not be read: ${e.message.slice(0, 200)}`,
            undefined,
            { retryable: false, cause: e },
          ),
        ),
      ),
    );
    worker.once('exit', (code) =>
      done(() =>
        reject(new ToolplaneError(ErrorCode.FETCH_FAILED, `The PDF reader stopped (exit ${code})`, undefined, false)),
      ),
    );
  });
}
