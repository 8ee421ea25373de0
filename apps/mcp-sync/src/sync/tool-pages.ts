import { McpSyncErrorCode, type ExternalToolInput } from '@toolplane/contracts';
import type { SyncError } from './tool-discovery';

/** What ExternalToolInput allows (a longer name or description would fail the whole write). */
const MAX_NAME = 256;
const MAX_DESCRIPTION = 65_536;

export interface ToolSetPlan {
  /** null: everything fits in the one external-tools.sync message; else the pages to stage first. */
  pages: ExternalToolInput[][] | null;
  /** Every tool written (inline or staged), in listing order. */
  written: ExternalToolInput[];
  /** Listed but not written (too large for any message, or beyond the registry's limits): kept as stored. */
  withheld: string[];
  errors: SyncError[];
}

export interface PlanEnvelopes {
  /** The external-tools.sync request with `tools: []` (and `keep` when some tools are withheld). */
  sync: (keep: string[]) => object;
  /** An external-tools.stage request with `tools: []` and the largest page number. */
  stage: object;
}

const bytesOf = (v: unknown): number => Buffer.byteLength(JSON.stringify(v), 'utf8');

/**
 * Splits a server's mapped tools so that no message exceeds `budget` bytes (serialized JSON, as
 * the messaging client sends it): one sync message when the whole set fits, else pages of
 * consecutive tools to stage. A tool that does not fit in a message on its own, or that the
 * registry would refuse (name or description too long), is withheld and reported: withheld names
 * go to the registry as `keep`, so an earlier stored version of such a tool is kept, not removed.
 */
export function planToolSet(tools: ExternalToolInput[], budget: number, envelopes: PlanEnvelopes): ToolSetPlan {
  const stageBase = bytesOf(envelopes.stage);
  const errors: SyncError[] = [];
  const withheld: string[] = [];
  const written: ExternalToolInput[] = [];
  const sizes: number[] = [];
  for (const t of tools) {
    if (t.name.length > MAX_NAME || (t.description?.length ?? 0) > MAX_DESCRIPTION) {
      withheld.push(t.name);
      errors.push({
        code: McpSyncErrorCode.MCP_TOOL_REJECTED,
        tool: t.name.slice(0, MAX_NAME),
        message: `${t.name.slice(0, 80)} was not synced: its ${t.name.length > MAX_NAME ? `name is longer than ${MAX_NAME}` : `description is longer than ${MAX_DESCRIPTION}`} characters; a version already stored is kept`,
      });
      continue;
    }
    const size = bytesOf(t);
    if (stageBase + size > budget) {
      withheld.push(t.name);
      errors.push({
        code: McpSyncErrorCode.TOOL_TOO_LARGE,
        tool: t.name,
        message: `${t.name} was not synced: its definition is ${size} bytes, more than one registry message may carry (MCP_SYNC_MESSAGE_BYTES ${budget}); a version already stored is kept`,
      });
      continue;
    }
    written.push(t);
    sizes.push(size);
  }
  // Each tool after the first adds a comma.
  const inline = bytesOf(envelopes.sync(withheld)) + sizes.reduce((a, s) => a + s + 1, 0) - Math.min(1, sizes.length);
  if (inline <= budget) return { pages: null, written, withheld, errors };
  const pages: ExternalToolInput[][] = [];
  let page: ExternalToolInput[] = [];
  let used = stageBase;
  written.forEach((t, i) => {
    if (page.length && used + sizes[i]! + 1 > budget) {
      pages.push(page);
      page = [];
      used = stageBase;
    }
    used += sizes[i]! + (page.length ? 1 : 0);
    page.push(t);
  });
  if (page.length) pages.push(page);
  return { pages, written, withheld, errors };
}
