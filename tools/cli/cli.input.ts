import { readFileSync } from 'node:fs';
import { UsageError } from './cli.errors';

/** A JSON object from a file (`-`: stdin). */
export function jsonFile(path: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path === '-' ? 0 : path, 'utf8'));
  } catch {
    throw new UsageError(`${path} is not a JSON file`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new UsageError(`${path} does not hold a JSON object`);
  return value as Record<string, unknown>;
}
