import { z } from 'zod';

/** A comma-separated list variable of a remote runner's config (empty items dropped). */
export const listEnv = z.string().transform((v) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);

/** A path inside the provider's sandboxes (the launcher's settings): absolute. */
export const sandboxPathEnv = z.string().startsWith('/', 'an absolute path');
