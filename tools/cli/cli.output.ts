/** Output of the CLI: JSON for scripts (`--json`), aligned tables for people. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printLine(text = ''): void {
  process.stdout.write(`${text}\n`);
}

export function printError(text: string): void {
  process.stderr.write(`${text}\n`);
}

const cell = (v: unknown): string =>
  v === null || v === undefined
    ? '-'
    : Array.isArray(v)
      ? v.join(',')
      : typeof v === 'object'
        ? JSON.stringify(v)
        : String(v);

/** A table: a header row of column names in capitals, then one row per item. */
export function printTable(rows: Array<Record<string, unknown>>, columns: string[]): void {
  const cells = rows.map((r) => columns.map((c) => cell(r[c]).replace(/\s+/g, ' ').slice(0, 60)));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  const line = (vals: string[]) =>
    vals
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  printLine(line(columns.map((c) => c.toUpperCase())));
  for (const r of cells) printLine(line(r));
}

/** Key: value lines of one object. */
export function printRecord(record: Record<string, unknown>): void {
  const width = Math.max(...Object.keys(record).map((k) => k.length));
  for (const [k, v] of Object.entries(record)) printLine(`${k.padEnd(width)}  ${cell(v)}`);
}

/** A progress bar on stderr (only on a terminal). */
export function progress(done: number, total: number, label: string): void {
  if (!process.stderr.isTTY) return;
  const width = 24;
  const filled = total ? Math.round((done / total) * width) : width;
  process.stderr.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} ${label}`.padEnd(80));
  if (done === total) process.stderr.write('\n');
}
