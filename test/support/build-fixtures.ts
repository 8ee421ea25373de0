import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, type Socket } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeBackendSdist } from './packages';

/** This machine's first non-loopback IPv4 address: where a build sandbox can reach the host (once allowlisted). */
export function hostAddress(): string {
  const a = Object.values(networkInterfaces())
    .flat()
    .find((i) => i?.family === 'IPv4' && !i.internal);
  if (!a) throw new Error('no non-loopback IPv4 address on this machine');
  return a.address;
}

/**
 * An sdist whose build (a PEP 517 backend) waits until the file `gate` exists, then ships a module
 * with VALUE = `value`: a build that lasts exactly as long as the test wants.
 */
export function writeGatedSdist(dir: string, name: string, version: string, gate: string, value: string): void {
  writeBackendSdist(dir, name, version, {
    module: 'gate_backend',
    prelude: `import time\n\nGATE, GATED_VALUE = ${JSON.stringify(gate)}, ${JSON.stringify(value)}`,
    build: 'while not os.path.exists(GATE):\n    time.sleep(0.05)\nvalue = GATED_VALUE',
  });
}

/** Packs `name@version` (package.json + the given files) with `npm pack` into `dest`. */
export function packNpm(
  dest: string,
  name: string,
  version: string,
  files: Record<string, string>,
  scripts?: Record<string, string>,
): void {
  const dir = mkdtempSync(join(tmpdir(), 'tp-npm-src-'));
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name, version, main: 'index.js', ...(scripts ? { scripts } : {}) }),
  );
  for (const [f, body] of Object.entries(files)) writeFileSync(join(dir, f), body);
  execFileSync('npm', ['pack', '--silent', '--pack-destination', dest], { cwd: dir, stdio: 'ignore' });
  rmSync(dir, { recursive: true, force: true });
}

/** An npm package whose postinstall script waits until the file `gate` exists; `result()` then returns `value`. */
export function packGatedNpm(dest: string, name: string, version: string, gate: string, value: string): void {
  packNpm(
    dest,
    name,
    version,
    {
      'index.js':
        "exports.result = () => { try { return require('./result.json'); } catch { return 'the build script did not run'; } };\n",
      'postinstall.js': `const fs = require('node:fs');
const wait = () => (fs.existsSync(${JSON.stringify(gate)}) ? fs.writeFileSync('result.json', JSON.stringify(${JSON.stringify(value)})) : setTimeout(wait, 50));
wait();
`,
    },
    { postinstall: 'node postinstall.js' },
  );
}

/** A test CA and a server certificate it signed for `hostname` (openssl), in a temp dir. */
export function testCertificates(hostname: string): {
  dir: string;
  caFile: string;
  key: string;
  cert: string;
  remove(): void;
} {
  const dir = mkdtempSync(join(tmpdir(), 'tp-ca-'));
  const f = (n: string) => join(dir, n);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  const caExtensions = [
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
    '-addext',
    'subjectKeyIdentifier=hash',
  ];
  ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=Toolplane test CA',
    ...caExtensions,
  );
  ssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    f('server.key'),
    '-out',
    f('server.csr'),
    '-subj',
    `/CN=${hostname}`,
  );
  writeFileSync(
    f('ext.cnf'),
    `subjectAltName=DNS:${hostname}\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n`,
  );
  ssl(
    'x509',
    '-req',
    '-in',
    f('server.csr'),
    '-CA',
    f('ca.pem'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('server.pem'),
    '-days',
    '2',
    '-extfile',
    f('ext.cnf'),
  );
  execFileSync('chmod', ['-R', 'a+rX', dir]);
  return {
    dir,
    caFile: f('ca.pem'),
    key: readFileSync(f('server.key'), 'utf8'),
    cert: readFileSync(f('server.pem'), 'utf8'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * A package index over HTTPS on loopback serving the files of `dir`: PEP 503 "simple" pages
 * (`/simple/<name>/`), npm packuments (`/npm/<name>`, for `<name>-<version>.tgz`) and the files
 * (`/files/<file>`), with links on `https://<hostname>:<port>`. Records the paths asked for.
 */
export async function startHttpsIndex(
  dir: string,
  hostname: string,
  tls: { key: string; cert: string },
): Promise<{ port: number; server: Server; requests: string[] }> {
  const requests: string[] = [];
  let port = 0;
  const server = createHttpsServer(tls, (req, res) => {
    const url = req.url ?? '';
    requests.push(url);
    const files = readdirSync(dir);
    const simple = /^\/simple\/([^/]+)\/?$/.exec(url);
    if (simple) {
      const found = files.filter(
        (f) => f.toLowerCase().startsWith(`${simple[1]!.toLowerCase()}-`) && !f.endsWith('.tgz'),
      );
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(`<html><body>${found.map((f) => `<a href="/files/${f}">${f}</a>`).join('\n')}</body></html>`);
      return;
    }
    const npm = /^\/npm\/([^/@][^/]*)$/.exec(url);
    if (npm) {
      const name = decodeURIComponent(npm[1]!);
      const versions: Record<string, unknown> = {};
      for (const f of files.filter((x) => x.startsWith(`${name}-`) && x.endsWith('.tgz'))) {
        const version = f.slice(name.length + 1, -4);
        const body = readFileSync(join(dir, f));
        versions[version] = {
          name,
          version,
          dist: {
            tarball: `https://${hostname}:${port}/files/${f}`,
            shasum: createHash('sha1').update(body).digest('hex'),
            integrity: `sha512-${createHash('sha512').update(body).digest('base64')}`,
          },
        };
      }
      const latest = Object.keys(versions).at(-1);
      if (!latest) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ name, 'dist-tags': { latest }, versions }));
      return;
    }
    const file = /^\/files\/([^/]+)$/.exec(url);
    if (file && files.includes(file[1]!)) {
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(readFileSync(join(dir, file[1]!)));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
  return { port, server, requests };
}

/**
 * An HTTP proxy on `host` that only tunnels (CONNECT) to the names in `routes` (name → port on
 * loopback), as a corporate proxy resolves names its clients cannot. Records every CONNECT target.
 */
export async function startConnectProxy(
  host: string,
  routes: Record<string, number>,
): Promise<{ url: string; server: Server; connects: string[]; close(): Promise<void> }> {
  const connects: string[] = [];
  const sockets = new Set<Socket>();
  const server = createHttpServer((_req, res) => res.writeHead(405).end());
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('connect', (req, client: Socket, head: Buffer) => {
    const target = req.url ?? '';
    connects.push(target);
    const [name, port] = target.split(':');
    const routed = routes[name!];
    if (routed === undefined || Number(port) !== routed) {
      client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    const upstream = connect(routed, '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  return {
    url: `http://${host}:${(server.address() as { port: number }).port}`,
    server,
    connects,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
