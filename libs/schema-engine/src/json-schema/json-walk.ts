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
