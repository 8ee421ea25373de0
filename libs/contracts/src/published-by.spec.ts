import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { defineEvent, type EventDescriptor } from './descriptor';
import { APP_NAMES, type AppName } from './identity';
import * as contracts from './index';

const ROOT = join(__dirname, '..', '..', '..');

/** Every event descriptor the contracts export, those in records (REQUEST_CANCELS, RUNNERS) included. */
function allEvents(): Map<string, EventDescriptor> {
  const out = new Map<string, EventDescriptor>();
  const visit = (name: string, v: unknown, depth: number): void => {
    if (!v || typeof v !== 'object' || depth > 2) return;
    if ((v as { kind?: unknown }).kind === 'event') out.set(name, v as EventDescriptor);
    else if (!Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype)
      for (const [k, x] of Object.entries(v)) visit(`${name}.${k}`, x, depth + 1);
  };
  for (const [name, v] of Object.entries(contracts)) visit(name, v, 0);
  return out;
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return sources(p);
    return p.endsWith('.ts') && !p.endsWith('.spec.ts') ? [p] : [];
  });
}

/**
 * The events an app's code publishes by name: `.publish(X`, `.broadcast(X`, `.notify(X`, an
 * outbox's `descriptors: [...]`, and a `DESCRIPTORS = {...}` map handed to publish. (A descriptor
 * reached another way is still checked at run time: MessagingClient refuses to publish an event
 * whose publishedBy does not name its app.)
 */
function publishedIn(app: AppName): Set<string> {
  const names = new Set<string>();
  const dir = join(ROOT, 'apps', app, 'src');
  for (const file of sources(dir)) {
    const src = readFileSync(file, 'utf8');
    for (const m of src.matchAll(/\.(?:publish|broadcast|notify)\(\s*([A-Z][A-Za-z0-9]*)\b/g)) names.add(m[1]!);
    for (const m of src.matchAll(/(?:descriptors:\s*\[|DESCRIPTORS\s*=\s*\{)([^\]}]*)[\]}]/g)) {
      for (const id of m[1]!.matchAll(/(?:\.\.\.)?([A-Z][A-Za-z0-9_]*)\b/g)) names.add(id[1]!);
    }
  }
  return names;
}

describe('publishedBy', () => {
  const events = allEvents();

  it('is named on every event, with known apps (sealed events: the same apps as sealed.from)', () => {
    expect(events.size).toBeGreaterThan(20);
    for (const [name, e] of events) {
      expect({
        name,
        ok: e.publishedBy.length > 0 && e.publishedBy.every((a) => (APP_NAMES as readonly string[]).includes(a)),
      }).toEqual({ name, ok: true });
      if (e.sealed) expect([...e.sealed.from].sort()).toEqual([...e.publishedBy].sort());
    }
    expect(() =>
      defineEvent({ subject: 'toolplane.v1.events.x.created', summary: '', payload: z.object({}), publishedBy: [] }),
    ).toThrow(/publishedBy/);
    const sealed = {
      subject: 'toolplane.internal.v1.events.x.created',
      summary: '',
      payload: z.object({}),
      sealed: { from: ['executor'] as const, to: 'registry' as const },
    };
    expect(() => defineEvent({ ...sealed, publishedBy: ['registry'] })).toThrow(/publishedBy/);
  });

  it('names the apps whose code publishes the event', () => {
    const byName = new Map([...events].map(([n, e]) => [n.split('.')[0]!, e] as const));
    const lists: Record<string, readonly EventDescriptor[]> = {
      EXECUTION_EVENTS: contracts.EXECUTION_EVENTS,
      CONNECTION_EVENTS: contracts.CONNECTION_EVENTS,
    };
    let checked = 0;
    for (const app of APP_NAMES) {
      for (const name of publishedIn(app)) {
        for (const e of lists[name] ?? (byName.has(name) ? [byName.get(name)!] : [])) {
          expect({ app, event: e.subject, owner: e.publishedBy.includes(app) }).toEqual({
            app,
            event: e.subject,
            owner: true,
          });
          checked++;
        }
      }
    }
    // The registry's and the executor's outboxes, credentials' broadcasts, mcp-sync's events, the gateway's notifies.
    expect(checked).toBeGreaterThanOrEqual(20);
  });
});
