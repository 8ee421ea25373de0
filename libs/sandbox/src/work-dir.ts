import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';

/** Where the harness ships: libs/sandbox/python, beside src/ both in the tree and in dist/. */
export const HARNESS_PATH = path.resolve(__dirname, '..', 'python', 'harness.py');

export interface RunAs {
  uid: number;
  gid: number;
}

/**
 * Makes the work root (0711: another uid can enter its own run dir but cannot list the others)
 * and returns the harness path the run uid can read. When the runner drops privileges the harness
 * is copied into the work root, because the checkout it ships in may not be readable by that uid.
 */
export async function prepareWorkRoot(workRoot: string, runAs: RunAs | undefined): Promise<string> {
  await fs.mkdir(workRoot, { recursive: true, mode: 0o711 });
  if (!runAs) return HARNESS_PATH;
  await fs.chmod(workRoot, 0o711);
  const source = await fs.readFile(HARNESS_PATH);
  const digest = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const target = path.join(workRoot, `harness-${digest}.py`);
  const temp = `${target}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  await fs.writeFile(temp, source, { mode: 0o644 });
  await fs.rename(temp, target); // atomic: concurrent drivers sharing the root never see half a file
  return target;
}

/** A fresh 0700 directory for one run, owned by the run uid. */
export async function createRunDir(workRoot: string, runAs: RunAs | undefined): Promise<string> {
  const dir = await fs.mkdtemp(path.join(workRoot, 'run-'));
  await fs.chmod(dir, 0o700);
  if (runAs) await fs.chown(dir, runAs.uid, runAs.gid);
  return dir;
}

/** Removes a run dir whatever the tool did to it (read-only or 000 sub-directories included). */
export async function removeRunDir(dir: string): Promise<void> {
  try {
    await fs.rm(dir, { recursive: true, force: true });
  } catch {
    await makeWritable(dir);
    await fs.rm(dir, { recursive: true, force: true });
  }
}

async function makeWritable(dir: string): Promise<void> {
  await fs.chmod(dir, 0o700).catch(() => undefined);
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) if (e.isDirectory()) await makeWritable(path.join(dir, e.name));
}
