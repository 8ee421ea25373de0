import { createHash } from 'node:crypto';

/** A requirement as tools and sandbox configs declare it. */
export interface Requirement {
  name: string;
  version?: string | null;
}

const NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:\[[A-Za-z0-9._,-]+\])?$/;
const VERSION = /^(?:[<>=!~]=?|===)?\s*[A-Za-z0-9.*+!_-]+(?:\s*,\s*(?:[<>=!~]=?|===)\s*[A-Za-z0-9.*+!_-]+)*$/;

/**
 * pip specifiers from requirements: `name` or `name==1.2` (a bare version) or `name>=1,<2`.
 * Throws on anything that is not a plain name and version (no URLs, paths or pip options).
 */
export function pipSpecifiers(reqs: readonly Requirement[]): string[] {
  const out = new Set<string>();
  for (const r of reqs) {
    const name = r.name.trim();
    if (!NAME.test(name)) throw new Error(`invalid requirement name ${JSON.stringify(r.name)}`);
    const version = (r.version ?? '').trim();
    if (!version) {
      out.add(name.toLowerCase());
      continue;
    }
    if (!VERSION.test(version)) throw new Error(`invalid version ${JSON.stringify(r.version)} for ${name}`);
    out.add(`${name.toLowerCase()}${/^[<>=!~]/.test(version) ? version.replace(/\s+/g, '') : `==${version}`}`);
  }
  return [...out].sort();
}

/** The virtualenv key: sha256 of the interpreter version and the sorted specifiers. */
export function environmentKey(pythonVersion: string, specifiers: readonly string[]): string {
  return createHash('sha256')
    .update(`${pythonVersion}\n${[...specifiers].sort().join('\n')}`)
    .digest('hex')
    .slice(0, 20);
}

/** The package pip names in its failure output, else the first requirement. */
export function failedPackage(pipOutput: string, specifiers: readonly string[]): string {
  const m =
    /No matching distribution found for ([^\s;]+)/.exec(pipOutput) ??
    /Could not find a version that satisfies the requirement ([^\s;(]+)/.exec(pipOutput) ??
    /Failed to build ([^\s;]+)/.exec(pipOutput) ??
    /Failed building wheel for ([^\s;]+)/.exec(pipOutput);
  return m?.[1] ?? specifiers[0] ?? 'unknown';
}

/** The package's name in a pip or npm specifier (`name==1.0`, `name>=1`, `x[extra]`, `@scope/name@^1` → the name). */
export function requirementName(spec: string): string {
  return /^@?[^<>=!~;\s[(@]+/.exec(spec.trim())?.[0] ?? spec;
}
