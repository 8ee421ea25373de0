import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Writes a pure-Python wheel `name-version-py3-none-any.whl` whose module exports VALUE (and, with `blobBytes`, ships that many random bytes). */
export function writeWheel(dir: string, name: string, version: string, value: string, blobBytes = 0): void {
  const script = `
import base64, hashlib, os, sys, zipfile
d, name, version, value, blob = sys.argv[1:6]
files = {
    f"{name}/__init__.py": f"VALUE = {value!r}\\n",
    f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n",
    f"{name}-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: toolplane-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
if int(blob):
    files[f"{name}/blob.bin"] = os.urandom(int(blob))
record = []
for path, text in files.items():
    data = text if isinstance(text, bytes) else text.encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append(f"{path},sha256={digest},{len(data)}")
record.append(f"{name}-{version}.dist-info/RECORD,,")
files[f"{name}-{version}.dist-info/RECORD"] = "\\n".join(record) + "\\n"
with zipfile.ZipFile(f"{d}/{name}-{version}-py3-none-any.whl", "w") as z:
    for path, text in files.items():
        z.writestr(path, text)
`;
  execFileSync('/usr/bin/python3', ['-I', '-c', script, dir, name, version, value, String(blobBytes)]);
}

/**
 * A runner set up for pip from a local wheelhouse only (PyPI is not reachable here): the wheels
 * written, a work root of its own (its virtualenvs die with it), the runner-local env for both.
 */
export function localWheelhouse(wheels: Array<[name: string, version: string, value: string, blobBytes?: number]>): {
  dir: string;
  workRoot: string;
  runnerEnv: Record<string, string>;
  remove(): void;
} {
  const dir = mkdtempSync(join(tmpdir(), 'tp-wheels-'));
  const workRoot = mkdtempSync(join(tmpdir(), 'tp-pip-runs-'));
  for (const [name, version, value, blob] of wheels) writeWheel(dir, name, version, value, blob);
  chmodSync(dir, 0o755);
  chmodSync(workRoot, 0o755);
  return {
    dir,
    workRoot,
    runnerEnv: {
      RUNNER_PIP_FIND_LINKS: dir,
      RUNNER_PIP_NO_INDEX: 'true',
      RUNNER_WORK_ROOT: workRoot,
      RUNNER_POOL_WARM: '1',
    },
    remove: () => {
      rmSync(dir, { recursive: true, force: true });
      rmSync(workRoot, { recursive: true, force: true });
    },
  };
}
