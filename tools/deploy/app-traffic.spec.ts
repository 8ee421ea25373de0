/**
 * PUBLIC_REQUESTS_SENT and EVENTS_READ (libs/contracts/src/traffic.ts) against the apps' code: the
 * NATS user of each app is generated from them, so a request the code makes that is not declared
 * would be refused by NATS in production, and a declared one the code never makes is a permission
 * too many. Read statically (the TypeScript AST of apps/<app>/src): every `<…messaging>.request(D,`,
 * `.onEvents(D | [D, …] | LOCAL,` and `.subscribeSealed(D,` call, D resolved to the contracts'
 * descriptors by name (or through a const array of them in the same file).
 */
import * as contracts from '@toolplane/contracts';
import {
  APP_NAMES,
  EVENTS_READ,
  EVENTS_READ_BY_EVERY_APP,
  PUBLIC_REQUESTS_SENT,
  RUNNERS,
  type AppName,
  type EventDescriptor,
  type RequestDescriptor,
} from '@toolplane/contracts';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const ROOT = join(__dirname, '..', '..');
const METHODS = ['request', 'onEvents', 'subscribeSealed'] as const;
type Method = (typeof METHODS)[number];
type Descriptor = RequestDescriptor | EventDescriptor;

/**
 * Calls whose descriptor is chosen at run time, by app and argument text: what each may be. A new
 * dynamic call fails the spec until it is listed here.
 */
const DYNAMIC: Record<string, readonly Descriptor[]> = {
  // The executor dispatches to the runner of the tool's provider.
  'executor: runner.run': Object.values(RUNNERS).map((r) => r.run),
  'executor: runnerOf(resolved.provider).environment': Object.values(RUNNERS).map((r) => r.environment),
  // libs/platform's runner core: the abandonment broadcast of its runner.
  'platform: this.abandoned': Object.values(RUNNERS).map((r) => r.abandoned),
};

interface Use {
  method: Method;
  descriptors: readonly Descriptor[];
  where: string;
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const path = join(dir, f);
    if (statSync(path).isDirectory()) return sources(path);
    return f.endsWith('.ts') && !f.endsWith('.spec.ts') ? [path] : [];
  });
}

const isDescriptor = (v: unknown): v is Descriptor =>
  typeof v === 'object' &&
  v !== null &&
  'kind' in v &&
  ((v as Descriptor).kind === 'request' || (v as Descriptor).kind === 'event');

/** Every messaging call of the sources under `dir`; `owner` keys DYNAMIC. */
function usesIn(dir: string, owner: string): { uses: Use[]; unresolved: string[] } {
  const uses: Use[] = [];
  const unresolved: string[] = [];
  for (const file of sources(dir)) {
    const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const locals = new Map<string, ts.Expression>();
    const collect = (n: ts.Node): void => {
      if (ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && n.initializer)
        locals.set(n.name.text, n.initializer);
      n.forEachChild(collect);
    };
    collect(sf);
    const resolve = (e: ts.Expression, depth = 0): Descriptor[] | undefined => {
      if (depth > 4) return undefined;
      if (ts.isAsExpression(e) || ts.isParenthesizedExpression(e)) return resolve(e.expression, depth);
      if (ts.isArrayLiteralExpression(e)) {
        const all = e.elements.map((x) => resolve(ts.isSpreadElement(x) ? x.expression : x, depth + 1));
        return all.every((x) => x !== undefined) ? all.flat() : undefined;
      }
      if (ts.isIdentifier(e)) {
        const exported = (contracts as Record<string, unknown>)[e.text];
        if (isDescriptor(exported)) return [exported];
        if (Array.isArray(exported) && exported.every(isDescriptor)) return exported;
        const local = locals.get(e.text);
        return local ? resolve(local, depth + 1) : undefined;
      }
      const dynamic = DYNAMIC[`${owner}: ${e.getText(sf)}`];
      return dynamic ? [...dynamic] : undefined;
    };
    const visit = (n: ts.Node): void => {
      if (
        ts.isCallExpression(n) &&
        ts.isPropertyAccessExpression(n.expression) &&
        (METHODS as readonly string[]).includes(n.expression.name.text)
      ) {
        const receiver = n.expression.expression.getText(sf);
        const arg = n.arguments[0];
        if (/messaging$/i.test(receiver) && arg) {
          const where = `${relative(ROOT, file)}:${sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1}`;
          const descriptors = resolve(arg);
          if (descriptors) uses.push({ method: n.expression.name.text as Method, descriptors, where });
          else unresolved.push(`${where}: ${owner}: ${arg.getText(sf)}`);
        }
      }
      n.forEachChild(visit);
    };
    visit(sf);
  }
  return { uses, unresolved };
}

const subjects = (ds: readonly Descriptor[]) => [...new Set(ds.map((d) => d.subject))].sort();
const APPS = APP_NAMES.map((app) => ({ app, ...usesIn(join(ROOT, 'apps', app, 'src'), app) }));
const sent = (uses: Use[]) =>
  uses.filter((u) => u.method === 'request').flatMap((u) => u.descriptors as RequestDescriptor[]);

describe('who sends and reads what (libs/contracts traffic.ts) against the apps’ code', () => {
  it('finds the messaging calls of every app (each resolved to descriptors, or listed as dynamic)', () => {
    expect(APPS.flatMap((a) => a.unresolved)).toEqual([]);
    // The scan sees the calls it must see: a spec that finds nothing would pass anything.
    expect(sent(APPS.find((a) => a.app === 'mcp-gateway')!.uses).map((d) => d.subject)).toContain(
      contracts.ToolsExecute.subject,
    );
  });

  it.each(APP_NAMES.map((a) => [a]))(
    '%s: the public requests its code makes are PUBLIC_REQUESTS_SENT',
    (app: AppName) => {
      const { uses } = APPS.find((a) => a.app === app)!;
      expect(subjects(sent(uses).filter((d) => d.visibility === 'public'))).toEqual(
        subjects(PUBLIC_REQUESTS_SENT[app]),
      );
    },
  );

  it.each(APP_NAMES.map((a) => [a]))(
    '%s: every internal request its code makes names it among its callers',
    (app: AppName) => {
      const { uses } = APPS.find((a) => a.app === app)!;
      const notCaller = sent(uses).filter((d) => d.visibility === 'internal' && !d.callers!.includes(app));
      expect(subjects(notCaller)).toEqual([]);
    },
  );

  it.each(APP_NAMES.map((a) => [a]))(
    '%s: the events its code subscribes to are EVENTS_READ, and its sealed broadcasts are sealed to it',
    (app: AppName) => {
      const { uses } = APPS.find((a) => a.app === app)!;
      const read = uses.filter((u) => u.method === 'onEvents').flatMap((u) => u.descriptors as EventDescriptor[]);
      expect(subjects(read)).toEqual(subjects(EVENTS_READ[app]));
      const sealed = uses
        .filter((u) => u.method === 'subscribeSealed')
        .flatMap((u) => u.descriptors as EventDescriptor[]);
      expect(subjects(sealed.filter((e) => e.sealed?.to !== app))).toEqual([]);
    },
  );

  it('lists every event the contracts export in EVENTS (public) or INTERNAL_EVENTS (a missing one would be refused by every NATS user)', () => {
    const exported = new Map<string, Descriptor>();
    const visit = (v: unknown, depth: number): void => {
      if (isDescriptor(v)) exported.set(v.subject, v);
      else if (v && typeof v === 'object' && depth < 3) for (const x of Object.values(v)) visit(x, depth + 1);
    };
    for (const v of Object.values(contracts)) visit(v, 0);
    const events = [...exported.values()].filter((d) => d.kind === 'event');
    expect(events.length).toBeGreaterThan(20);
    expect(subjects(events.filter((e) => !e.subject.startsWith('toolplane.internal.')))).toEqual(
      subjects(contracts.EVENTS),
    );
    expect(subjects(events.filter((e) => e.subject.startsWith('toolplane.internal.')))).toEqual(
      subjects(contracts.INTERNAL_EVENTS),
    );
  });

  it('libs/platform (run by every app) reads EVENTS_READ_BY_EVERY_APP and sends no public request', () => {
    const { uses, unresolved } = usesIn(join(ROOT, 'libs', 'platform', 'src'), 'platform');
    expect(unresolved).toEqual([]);
    expect(subjects(uses.filter((u) => u.method === 'onEvents').flatMap((u) => u.descriptors))).toEqual(
      subjects(EVENTS_READ_BY_EVERY_APP),
    );
    expect(subjects(sent(uses).filter((d) => d.visibility === 'public'))).toEqual([]);
    // What it does send is internal and open to every app (AuthStateGet).
    for (const d of sent(uses)) expect([d.subject, [...d.callers!].sort()]).toEqual([d.subject, [...APP_NAMES].sort()]);
  });

  it('no other library an app runs (libs/remote-runner, …) sends a public request or reads an event on its apps’ behalf', () => {
    // contracts and messaging are the mechanism itself; client and testing are not run by a service.
    const libs = readdirSync(join(ROOT, 'libs')).filter(
      (l) =>
        !['contracts', 'messaging', 'client', 'testing', 'platform'].includes(l) &&
        statSync(join(ROOT, 'libs', l, 'src'), { throwIfNoEntry: false })?.isDirectory(),
    );
    expect(libs).toContain('sandbox');
    for (const lib of libs) {
      const { uses, unresolved } = usesIn(join(ROOT, 'libs', lib, 'src'), lib);
      expect([lib, unresolved]).toEqual([lib, []]);
      expect([lib, subjects(sent(uses).filter((d) => d.visibility === 'public'))]).toEqual([lib, []]);
      expect([lib, subjects(uses.filter((u) => u.method === 'onEvents').flatMap((u) => u.descriptors))]).toEqual([
        lib,
        [],
      ]);
    }
  });
});
