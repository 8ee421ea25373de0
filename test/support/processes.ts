import { readdirSync, readFileSync } from 'node:fs';

/** Host pids whose command line contains `marker` (seen from the host: across every namespace). */
export function hostProcessesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    if (cmdline.split('\0').includes(marker)) found.push(Number(entry));
  }
  return found;
}

/** Polls until no host process carries `marker` (a process killed with SIGKILL takes a moment to go). */
export async function waitNoProcessWith(marker: string, timeoutMs = 3000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  let left = hostProcessesWith(marker);
  while (left.length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    left = hostProcessesWith(marker);
  }
  return left;
}
