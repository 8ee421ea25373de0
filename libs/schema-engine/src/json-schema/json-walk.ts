/** Small helpers shared by the schema transformations (strict conversion, MCP normalization, args schemas). */

export type Obj = Record<string, unknown>;

export const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Beyond this a schema is not transformed (hostile input); the validator reports it INVALID. */
export const MAX_TRANSFORM_DEPTH = 100;

/**
 * True when `value` nests deeper than `limit` or contains a cycle. Iterative, so hostile input
 * cannot overflow the stack; the recursive transformations run only on values that pass.
 */
export function tooDeepOrCyclic(value: unknown, limit = MAX_TRANSFORM_DEPTH): boolean {
  const onPath = new Set<object>();
  const stack: Array<{ v: object; depth: number; exit: boolean }> = [];
  if (typeof value === 'object' && value !== null) stack.push({ v: value, depth: 0, exit: false });
  let visited = 0;
  while (stack.length > 0) {
    const frame = stack.pop()!;
    if (frame.exit) {
      onPath.delete(frame.v);
      continue;
    }
    if (frame.depth > limit || onPath.has(frame.v) || (visited += 1) > 1_000_000) return true;
    onPath.add(frame.v);
    stack.push({ ...frame, exit: true });
    for (const child of Array.isArray(frame.v) ? frame.v : Object.values(frame.v)) {
      if (typeof child === 'object' && child !== null) stack.push({ v: child, depth: frame.depth + 1, exit: false });
    }
  }
  return false;
}

/**
 * The UTF-8 length of `JSON.stringify(value)` for a JSON value, counted only until it passes
 * `limit` (it then returns some number above `limit`): linear in the smaller of the two, also
 * when shared sub-objects would make the text exponentially long. Iterative (no stack depth).
 */
export function jsonByteLength(value: unknown, limit: number): number {
  const skipped = (v: unknown): boolean => v === undefined || typeof v === 'function' || typeof v === 'symbol';
  let total = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && total <= limit) {
    const v = stack.pop();
    if (typeof v === 'string') total += stringBytes(v);
    else if (Array.isArray(v)) {
      total += 1 + Math.max(v.length, 1); // brackets and commas
      for (const item of v) stack.push(skipped(item) ? null : item);
    } else if (isObject(v)) {
      let keys = 0;
      for (const k of Object.keys(v)) {
        const item = v[k];
        if (skipped(item)) continue;
        total += stringBytes(k) + 1; // "key":
        keys += 1;
        stack.push(item);
      }
      total += 1 + Math.max(keys, 1); // braces and commas
    } else {
      total += (JSON.stringify(v) ?? 'null').length; // numbers, booleans, null: ASCII
    }
  }
  return total;
}

/** Printable ASCII other than `"` and `\`: one byte each in JSON, no escape. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

function stringBytes(s: string): number {
  return PLAIN.test(s) ? s.length + 2 : Buffer.byteLength(JSON.stringify(s), 'utf8');
}

/** A deep copy of a JSON value (own enumerable keys, `__proto__` kept as data). */
export function cloneJson<T>(value: T): T {
  if (Array.isArray(value)) return value.map(cloneJson) as T;
  if (!isObject(value)) return value;
  const out: Obj = {};
  for (const [k, v] of Object.entries(value)) put(out, k, cloneJson(v));
  return out as T;
}

/** Sets an own, enumerable key, even one named `__proto__`. */
export function put(target: Obj, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** JSON with sorted keys: equal schemas give equal strings. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (!isObject(value)) return JSON.stringify(value) ?? 'null';
  return `{${Object.keys(value)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
    .join(',')}}`;
}

/** Sub-schemas of a schema node, with their keyword paths, for schema-aware walks. */
export function forEachSubschema(node: Obj, fn: (child: Obj, path: string) => void): void {
  const props = node.properties;
  if (isObject(props)) for (const [name, s] of Object.entries(props)) if (isObject(s)) fn(s, `properties.${name}`);
  if (isObject(node.items)) fn(node.items, 'items');
  if (isObject(node.additionalProperties)) fn(node.additionalProperties, 'additionalProperties');
  for (const kw of ['prefixItems', 'anyOf', 'oneOf', 'allOf']) {
    const list = node[kw];
    if (Array.isArray(list)) list.forEach((s, i) => isObject(s) && fn(s, `${kw}[${i}]`));
  }
  for (const kw of ['$defs', 'definitions']) {
    const defs = node[kw];
    if (isObject(defs)) for (const [name, s] of Object.entries(defs)) if (isObject(s)) fn(s, `${kw}.${name}`);
  }
}
