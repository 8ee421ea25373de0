/**
 * `npm run reliability:faults`: the fault suite (test/e2e/faults-*.e2e.ts) with every scenario
 * repeated FAULT_REPEAT times (default 5), then one table: scenario → what the caller saw → what
 * was stored → passes. The same files run once each in `npm test` (the fast form).
 *
 *   FAULT_REPEAT=10 npm run reliability:faults
 *   FAULT_FILES=faults-infra npm run reliability:faults     (a subset: a jest path pattern)
 *
 * Every row of every attempt is kept in the JSON-lines file named at the end.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { FaultRow } from '../../test/support/faults';

const ROOT = resolve(__dirname, '..', '..', '..');
const say = (line: string): void => void process.stdout.write(`${line}\n`);

function main(): number {
  const repeat = process.env.FAULT_REPEAT ?? '5';
  const report = join(mkdtempSync(join(tmpdir(), 'tp-faults-report-')), 'faults.jsonl');
  const pattern = process.env.FAULT_FILES ?? 'test/e2e/faults-';
  say(`fault suite: each scenario ${repeat}×, files matching ${pattern}`);
  const jest = spawnSync(
    process.execPath,
    [join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js'), pattern, '--selectProjects', 'e2e', '--ci'],
    {
      cwd: ROOT,
      stdio: 'inherit',
      env: {
        TOOLPLANE_TEST_READY_TIMEOUT_MS: '120000',
        ...process.env,
        FAULT_REPEAT: repeat,
        FAULT_REPORT: report,
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --experimental-vm-modules`.trim(),
      },
    },
  );
  const rows: FaultRow[] = existsSync(report)
    ? readFileSync(report, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as FaultRow)
    : [];
  printTable(rows);
  say(`\nevery attempt: ${report}`);
  return jest.status === 0 && rows.length > 0 && rows.every((r) => r.pass) ? 0 : 1;
}

/** One line per scenario: passes out of attempts, and what the last attempt (the first failed one, if any) saw and stored. */
function printTable(rows: readonly FaultRow[]): void {
  const by = new Map<string, FaultRow[]>();
  for (const r of rows) by.set(r.scenario, [...(by.get(r.scenario) ?? []), r]);
  const lines = [...by].map(([scenario, rs]) => {
    const shown = rs.find((r) => !r.pass) ?? rs.at(-1)!;
    const passed = rs.filter((r) => r.pass).length;
    return {
      scenario,
      saw: shown.saw,
      stored: shown.stored,
      result: `${passed === rs.length ? 'pass' : 'FAIL'} ${passed}/${rs.length}`,
    };
  });
  const cols = ['scenario', 'saw', 'stored', 'result'] as const;
  const heads = { scenario: 'scenario', saw: 'what the caller saw', stored: 'what was stored', result: 'result' };
  say(`\n| ${cols.map((c) => heads[c]).join(' | ')} |`);
  say(`|${cols.map(() => '---').join('|')}|`);
  for (const l of lines) say(`| ${cols.map((c) => l[c].replace(/\|/g, '/')).join(' | ')} |`);
  if (!lines.length) say('| (no scenario reported: did the suite start?) | | | FAIL |');
}

process.exitCode = main();
