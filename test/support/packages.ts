import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * What a hostile build script reports about its own confinement (the JSON it stores in the package
 * it builds): seccomp and capabilities from /proc/self/status, a user namespace attempt, connects
 * to `targets` ("host port"), a name lookup, and links planted at `plant` (path → target).
 */
export const PROBE_PY = `
import ctypes, json, os, socket

def probe(targets, plant):
    out = {}
    status = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\\t" in l)
    out["seccomp"] = status.get("Seccomp", "").strip()
    out["no_new_privs"] = status.get("NoNewPrivs", "").strip()
    out["cap_eff"] = status.get("CapEff", "").strip()
    libc = ctypes.CDLL(None, use_errno=True)
    out["unshare_user"] = [libc.unshare(0x10000000), ctypes.get_errno()]
    for t in targets:
        host, port = t.split(" ")
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        s.settimeout(5)
        try:
            s.connect((host, int(port)))
            out[t] = "connected"
        except OSError as e:
            out[t] = type(e).__name__
        finally:
            s.close()
    try:
        socket.getaddrinfo("example.com", 443)
        out["dns"] = "resolved"
    except OSError as e:
        out["dns"] = type(e).__name__
    for path, target in plant.items():
        try:
            os.symlink(target, path)
            out["plant " + path] = "planted"
        except OSError as e:
            out["plant " + path] = e.strerror
    return out
`;

/**
 * An sdist `name-version.tar.gz` with an in-tree PEP 517 backend `module` (no build requirements,
 * so it builds offline). The backend runs `prelude` (Python) on import; its build_wheel runs `build`
 * (Python statements, one per line) that set `value`, then ships a wheel whose `name.VALUE` is it.
 */
export function writeBackendSdist(
  dir: string,
  name: string,
  version: string,
  backend: { module: string; prelude: string; build: string },
): void {
  const src = mkdtempSync(join(tmpdir(), 'tp-sdist-'));
  const root = join(src, `${name}-${version}`);
  execFileSync('mkdir', ['-p', root]);
  writeFileSync(
    join(root, 'pyproject.toml'),
    `[build-system]\nrequires = []\nbuild-backend = "${backend.module}"\nbackend-path = ["."]\n\n[project]\nname = "${name}"\nversion = "${version}"\n`,
  );
  writeFileSync(join(root, 'PKG-INFO'), `Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\n`);
  const build = backend.build
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');
  writeFileSync(
    join(root, `${backend.module}.py`),
    `${backend.prelude}
import base64, hashlib, os, zipfile

NAME, VERSION = ${JSON.stringify(name)}, ${JSON.stringify(version)}

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
${build}
    files = {
        NAME + "/__init__.py": "VALUE = %r\\n" % value,
        "%s-%s.dist-info/METADATA" % (NAME, VERSION): "Metadata-Version: 2.1\\nName: %s\\nVersion: %s\\n" % (NAME, VERSION),
        "%s-%s.dist-info/WHEEL" % (NAME, VERSION): "Wheel-Version: 1.0\\nGenerator: toolplane-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(text.encode())))
    record.append("%s-%s.dist-info/RECORD,," % (NAME, VERSION))
    files["%s-%s.dist-info/RECORD" % (NAME, VERSION)] = "\\n".join(record) + "\\n"
    wheel = "%s-%s-py3-none-any.whl" % (NAME, VERSION)
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
    return wheel
`,
  );
  execFileSync('tar', ['-czf', join(dir, `${name}-${version}.tar.gz`), '-C', src, `${name}-${version}`]);
  rmSync(src, { recursive: true, force: true });
}

/** An sdist whose build_wheel runs PROBE_PY and ships the result as `name.VALUE` (JSON). */
export function writeProbingSdist(
  dir: string,
  name: string,
  version: string,
  targets: string[],
  plant: Record<string, string>,
): void {
  writeBackendSdist(dir, name, version, {
    module: 'probe_backend',
    prelude: PROBE_PY,
    build: `value = json.dumps(probe(${JSON.stringify(targets)}, ${JSON.stringify(plant)}))`,
  });
}

/** An npm tarball whose postinstall script runs the same probe (on Node) and writes result.json beside itself. */
export function packProbingNpm(
  dest: string,
  name: string,
  version: string,
  targets: string[],
  plant: Record<string, string>,
): void {
  const dir = mkdtempSync(join(tmpdir(), 'tp-npm-probe-'));
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name, version, main: 'index.js', scripts: { postinstall: 'node postinstall.js' } }),
  );
  writeFileSync(
    join(dir, 'index.js'),
    `exports.result = () => { try { return require('./result.json'); } catch { return 'the build script did not run'; } };\n`,
  );
  writeFileSync(
    join(dir, 'postinstall.js'),
    `const fs = require('node:fs');
const net = require('node:net');
const dns = require('node:dns');
const out = {};
const status = Object.fromEntries(fs.readFileSync('/proc/self/status', 'utf8').split('\\n').filter((l) => l.includes(':\\t')).map((l) => l.split(':\\t')));
out.seccomp = status.Seccomp.trim();
out.no_new_privs = status.NoNewPrivs.trim();
out.cap_eff = status.CapEff.trim();
for (const [path, target] of Object.entries(${JSON.stringify(plant)})) {
  try { fs.symlinkSync(target, path); out['plant ' + path] = 'planted'; } catch (e) { out['plant ' + path] = e.code; }
}
const dial = (t) => new Promise((resolve) => {
  const [host, port] = t.split(' ');
  const s = net.connect({ host, port: Number(port), timeout: 5000 });
  s.on('connect', () => { s.destroy(); resolve('connected'); });
  s.on('error', (e) => resolve(e.code));
  s.on('timeout', () => { s.destroy(); resolve('timeout'); });
});
(async () => {
  for (const t of ${JSON.stringify(targets)}) out[t] = await dial(t);
  out.dns = await new Promise((r) => dns.lookup('example.com', (e) => r(e ? e.code : 'resolved')));
  fs.writeFileSync('result.json', JSON.stringify(out));
})();
`,
  );
  execFileSync('npm', ['pack', '--silent', '--pack-destination', dest], { cwd: dir, stdio: 'ignore' });
  rmSync(dir, { recursive: true, force: true });
}

/** A PEP 503 "simple" package index serving the files of `dir` (name-version.* → /simple/name/). */
export async function startSimpleIndex(
  dir: string,
  host: string,
): Promise<{ url: string; server: Server; requests: string[] }> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? '');
    const m = /^\/simple\/([^/]+)\/?$/.exec(req.url ?? '');
    if (m) {
      const files = readdirSync(dir).filter((f) => f.toLowerCase().startsWith(`${m[1]!.toLowerCase()}-`));
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(`<html><body>${files.map((f) => `<a href="/files/${f}">${f}</a>`).join('\n')}</body></html>`);
      return;
    }
    const f = /^\/files\/([^/]+)$/.exec(req.url ?? '');
    if (f && readdirSync(dir).includes(f[1]!)) {
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(readFileSync(join(dir, f[1]!)));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  return { url: `http://${host}:${(server.address() as { port: number }).port}/simple/`, server, requests };
}
