'use strict';
/*
 * Toolplane Node harness: runs one TypeScript/JavaScript tool function in a slot child.
 *
 * The slot child (python/slot.py) confines itself (no capabilities, no new privileges, seccomp,
 * rlimits, the call's env) and then execs `node node_harness.cjs` with:
 *   fd 3  the result channel: exactly one line {"v":1,"nonce","status":"success","value"} or
 *         {"v":1,"nonce","status":"error","type","message"} (as python/harness.py);
 *   fd 5  a memfd holding the job JSON {nonce, source (JavaScript: types already stripped by the
 *         runner), function, params, args, agent_id, module_dir}.
 * stdout/stderr belong to the tool. Arguments are data, never spliced into source.
 */
const fs = require('node:fs');
const vm = require('node:vm');
const { createRequire } = require('node:module');

// The result channel is a socket (it cannot be reopened close-on-exec through /proc, and Node has
// no fcntl): a subprocess of the tool may inherit it, which gives it nothing the tool itself lacks
// (bytes on fd 3 besides the frame make the call a protocol error), and the slot kills every
// process of the call before the next one.
const resultFd = 3;
// Blocking stdout/stderr: a tool writing faster than the runner reads waits, as a Python tool does,
// instead of queueing its output in its heap (where a flood ends in a V8 out-of-memory abort before
// the runner has seen enough bytes to stop it at the output limit).
for (const stream of [process.stdout, process.stderr]) stream._handle?.setBlocking?.(true);
const job = JSON.parse(fs.readFileSync(5, 'utf8'));
fs.closeSync(5);
const nonce = job.nonce;
delete job.nonce;
const exit = typeof process.reallyExit === 'function' ? process.reallyExit.bind(process) : process.exit.bind(process);
let finished = false;

function text(v) {
  try {
    return String(v);
  } catch {
    try {
      return Object.prototype.toString.call(v);
    } catch {
      return '<unprintable>';
    }
  }
}

function jsonable(v, seen) {
  if (v === null || v === undefined) return null;
  const t = typeof v;
  if (t === 'string' || t === 'boolean') return v;
  if (t === 'number') return Number.isFinite(v) ? v : text(v);
  if (t !== 'object') return text(v); // bigint, symbol, function
  if (seen.has(v)) return '<circular reference>';
  seen.add(v);
  try {
    if (typeof v.toJSON === 'function') {
      const j = v.toJSON();
      if (j !== v) return jsonable(j, seen);
    }
    if (Array.isArray(v)) return v.map((x) => jsonable(x, seen));
    if (v instanceof Map || v instanceof Set || v instanceof Promise || v instanceof WeakMap || v instanceof WeakSet)
      return text(v);
    if (ArrayBuffer.isView(v)) return text(v);
    const out = {};
    for (const k of Object.keys(v)) {
      const x = v[k];
      if (x === undefined || typeof x === 'function' || typeof x === 'symbol') continue;
      out[k] = jsonable(x, seen);
    }
    return out;
  } catch {
    return text(v);
  } finally {
    seen.delete(v);
  }
}

function finish(frame) {
  if (finished) return;
  finished = true;
  let line;
  try {
    line = JSON.stringify(frame) + '\n';
  } catch (e) {
    line =
      JSON.stringify({
        v: 1,
        nonce,
        status: 'error',
        type: 'TypeError',
        message: `the result is not serializable: ${text(e && e.message)}`,
      }) + '\n';
  }
  const buf = Buffer.from(line, 'utf8');
  let off = 0;
  while (off < buf.length) off += fs.writeSync(resultFd, buf, off);
  fs.closeSync(resultFd);
  exit(0); // skip the tool's exit hooks and pending timers: the result is delivered
}

function fail(err) {
  let type = 'Error';
  let message;
  if (err !== null && typeof err === 'object') {
    try {
      type = typeof err.name === 'string' && err.name ? err.name : (err.constructor && err.constructor.name) || 'Error';
      message = typeof err.message === 'string' ? err.message : text(err);
    } catch {
      message = text(err);
    }
    try {
      process.stderr.write(`${typeof err.stack === 'string' ? err.stack : `${type}: ${message}`}\n`);
    } catch {
      // stderr closed by the tool
    }
  } else {
    type = typeof err === 'string' ? 'Error' : typeof err;
    message = text(err);
    try {
      process.stderr.write(`Uncaught ${type}: ${message}\n`);
    } catch {
      // stderr closed by the tool
    }
  }
  finish({ v: 1, nonce, status: 'error', type: text(type), message: text(message) });
}

process.on('uncaughtException', fail);
process.on('unhandledRejection', fail);

async function main() {
  const name = job.function;
  const filename = `/tool/${name}.js`;
  let exported;
  const grab = (f) => void (exported = f);
  const scoped = /^[A-Za-z_$][\w$]*$/.test(name)
    ? `\n;__toolplane_grab(typeof ${name} === 'function' ? ${name} : undefined);`
    : '';
  const mod = { exports: {} };
  const req = createRequire(`${job.module_dir || '/opt/npm'}/tool.js`);
  const params = ['exports', 'require', 'module', '__filename', '__dirname', '__toolplane_grab'];
  let fn0;
  try {
    fn0 = vm.compileFunction(job.source + scoped, params, { filename });
  } catch (e) {
    if (!scoped) throw e;
    fn0 = vm.compileFunction(job.source, params, { filename }); // e.g. a function named like a keyword: exports only
  }
  fn0.call(mod.exports, mod.exports, req, mod, filename, '/tool', grab);
  const ex = mod.exports;
  let fn = exported;
  if (typeof fn !== 'function' && ex && typeof ex[name] === 'function') fn = ex[name];
  if (typeof fn !== 'function' && ex && typeof ex.default === 'function') fn = ex.default;
  if (typeof fn !== 'function' && typeof ex === 'function') fn = ex;
  if (typeof fn !== 'function') {
    const e = new ReferenceError(`function ${name} is not defined by the tool source`);
    e.stack = `ReferenceError: ${e.message}`;
    throw e;
  }
  const args = Object.assign({}, job.args || {});
  if (job.agent_id != null && Array.isArray(job.params)) {
    for (const p of ['agent_id', 'agentId']) if (job.params.includes(p) && !(p in args)) args[p] = job.agent_id;
  }
  // Parameters in declaration order, by name; a destructured parameter (null) gets the args object.
  const order = Array.isArray(job.params) ? job.params : null;
  const positional = order ? order.map((p) => (p === null ? args : args[p])) : [args];
  const value = await fn(...positional);
  finish({ v: 1, nonce, status: 'success', value: jsonable(value, new Set()) });
}

main().catch(fail);
