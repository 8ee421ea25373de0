import { ERROR_CODE_TRAITS, ERROR_CODES, ErrorCode, type ErrorCodeTrait } from '@toolplane/contracts';
import { code, table } from './markdown';

/** How the error table names each trait, and what it tells a caller (the ErrorCodeTraits docblocks, shorter). */
const TRAITS: Record<Exclude<ErrorCodeTrait, 'retryable'>, { label: string; means: string }> = {
  fallback: {
    label: 'fallback',
    means:
      "the provider could not take the call and the tool did not start: the org's `fallback_providers` are tried in order",
  },
  notStarted: {
    label: 'not started',
    means: 'proves the tool did not start: a queued call is taken again, an idempotency key is released',
  },
  permanentForConnection: {
    label: 'permanent',
    means: 'an MCP connection with the same settings fails the same way: no reconnect attempts',
  },
  noRediscovery: { label: 'no rediscovery', means: "discovering an MCP server's OAuth metadata again cannot fix it" },
  awaitingUser: {
    label: 'awaiting user',
    means: 'an MCP server waits for a person to authorize: no backoff, the answer is kept until they do',
  },
  dependencyDown: {
    label: 'down',
    means: 'the serving app is down or did not answer in time (a caller that needs its answer names its own code)',
  },
  infrastructure: {
    label: 'infrastructure',
    means:
      'the service could not be asked or could not answer: a built-in fails with it as an envelope error, not as its result',
  },
  toolLevel: {
    label: 'tool-level',
    means:
      "of the caller's making and correctable by a model: the MCP gateway answers it as a tool error (`isError`), not a protocol error",
  },
};

/** The error codes table of docs/public-api.md, from the contracts' one table (ERROR_CODES). */
export function errorCodesDoc(): string {
  const others = ERROR_CODE_TRAITS.filter((t): t is Exclude<ErrorCodeTrait, 'retryable'> => t !== 'retryable');
  const legend = others.map((t) => `- **${TRAITS[t].label}**: ${TRAITS[t].means}.`).join('\n');
  const rows = (Object.values(ErrorCode) as ErrorCode[]).map((c) => {
    const row = ERROR_CODES[c];
    return [
      code(c),
      row.meaning,
      row.retryable ? 'yes' : 'no',
      others
        .filter((t) => row[t])
        .map((t) => TRAITS[t].label)
        .join(', '),
    ];
  });
  return `${table(['code', 'when', 'retryable', 'also'], rows)}\n\nThe last column names what else the code tells a caller:\n\n${legend}`;
}
