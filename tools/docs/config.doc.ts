import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { z } from 'zod';
import { code, table } from './markdown';

type Shape = Record<string, z.ZodType>;

/** Where the comments of the shared variables are written (an app's own comment wins). */
const SHARED_SOURCES = [
  'libs/platform/src/env.ts',
  'libs/platform/src/database.ts',
  'libs/observability/src/telemetry.ts',
];

/** The apps that have an env schema: `apps/<app>/src/<app>.config.ts`. */
export function configuredApps(root: string): string[] {
  return readdirSync(join(root, 'apps'))
    .filter((app) => existsSync(configSource(root, app)))
    .sort();
}

export const configSource = (root: string, app: string): string => join(root, 'apps', app, 'src', `${app}.config.ts`);

/** The env shape a config module exports (`<name>EnvShape`). */
export function envShapeOf(mod: Record<string, unknown>, app: string): Shape {
  const found = Object.entries(mod).filter(([k]) => k.endsWith('EnvShape'));
  if (found.length !== 1)
    throw new Error(
      `apps/${app}: expected one export named *EnvShape in its config, found ${found.map(([k]) => k).join(', ') || 'none'}`,
    );
  return found[0]![1] as Shape;
}

/** The doc comments (`/** … *\/`) of the UPPER_CASE properties of a source file, one line each. */
export function envComments(file: string): Map<string, string> {
  const text = readFileSync(file, 'utf8');
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out = new Map<string, string>();
  const visit = (n: ts.Node): void => {
    if (
      ts.isPropertyAssignment(n) &&
      (ts.isIdentifier(n.name) || ts.isStringLiteral(n.name)) &&
      /^[A-Z][A-Z0-9_]+$/.test(n.name.text)
    ) {
      const docs = (ts.getLeadingCommentRanges(text, n.getFullStart()) ?? [])
        .map((r) => text.slice(r.pos, r.end))
        .filter((c) => c.startsWith('/**'));
      const last = docs[docs.length - 1];
      if (last && !out.has(n.name.text)) {
        out.set(
          n.name.text,
          last
            .replace(/^\/\*\*|\*\/$/g, '')
            .split('\n')
            .map((l) => l.replace(/^\s*\*\s?/, '').trim())
            .filter(Boolean)
            .join(' '),
        );
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(src);
  return out;
}

function typeOf(s: z.ZodType): string {
  let js: Record<string, unknown>;
  try {
    js = z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  } catch {
    return '';
  }
  const values = js.enum as unknown[] | undefined;
  if (values) {
    const sorted = [...values].map(String).sort();
    return sorted.join() === '0,1,false,true'
      ? 'boolean (`true`/`false`/`1`/`0`)'
      : values.map((v) => code(String(v))).join(', ');
  }
  if (js.type === 'integer' || js.type === 'number') {
    const min = typeof js.minimum === 'number' ? js.minimum : undefined;
    const max = typeof js.maximum === 'number' && js.maximum < Number.MAX_SAFE_INTEGER ? js.maximum : undefined;
    const range =
      min !== undefined && max !== undefined
        ? ` ${min}–${max}`
        : min !== undefined
          ? ` ≥ ${min}`
          : max !== undefined
            ? ` ≤ ${max}`
            : '';
    return `${js.type}${range}`;
  }
  if (js.format === 'uri') return 'URL';
  return typeof js.type === 'string' ? js.type : '';
}

function defaultOf(s: z.ZodType): string {
  try {
    const js = z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    if (js.default !== undefined) return js.default === '' ? 'empty' : code(String(js.default));
  } catch {
    // not representable: ask the schema itself
  }
  const r = s.safeParse(undefined);
  if (!r.success) return '**required**';
  if (r.data === undefined) return 'unset';
  return code(typeof r.data === 'string' ? r.data : JSON.stringify(r.data));
}

function envTable(shape: Shape, keys: readonly string[], comments: ReadonlyMap<string, string>): string {
  return table(
    ['variable', 'type', 'default', 'meaning'],
    keys.map((k) => [code(k), typeOf(shape[k]!), defaultOf(shape[k]!), comments.get(k) ?? '']),
  );
}

function sharedComments(root: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const f of SHARED_SOURCES) for (const [k, v] of envComments(join(root, f))) if (!out.has(k)) out.set(k, v);
  return out;
}

/** The variables every app reads (libs/platform baseEnvShape). */
export function commonConfigDoc(root: string, base: Shape): string {
  return envTable(base, Object.keys(base), sharedComments(root));
}

/** An app's own variables: every key of its env shape that is not the shared definition of baseEnvShape. */
export function appConfigDoc(root: string, app: string, shape: Shape, base: Shape): string {
  const comments = new Map([...sharedComments(root), ...envComments(configSource(root, app))]);
  const own = Object.keys(shape).filter((k) => shape[k] !== base[k]);
  const shared = Object.keys(base).filter((k) => shape[k] === base[k]).length;
  return `${envTable(shape, own, comments)}\n\nAnd ${shared} variable(s) every app reads: [common.md](common.md).`;
}
