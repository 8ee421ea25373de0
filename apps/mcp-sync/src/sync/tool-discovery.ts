import { McpSyncErrorCode } from '@toolplane/contracts';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { z } from 'zod';
import { describe } from '../connections/mcp-connection';

/** A page as the server sent it: tools stay unknown here and are checked one by one. */
const LoosePage = z.looseObject({ tools: z.array(z.unknown()).default([]), nextCursor: z.string().optional() });
/** The least a tool needs to be kept (even as INVALID): a name. */
const NamedTool = z.looseObject({ name: z.string().min(1).max(256) });

export interface RawTool {
  name: string;
  description?: unknown;
  title?: unknown;
  inputSchema?: unknown;
  outputSchema?: unknown;
  annotations?: unknown;
}

export interface SyncError {
  code: string;
  message: string;
  tool?: string;
}

export interface Discovery {
  tools: RawTool[];
  /** Entries the server listed, malformed ones included. */
  listed: number;
  pages: number;
  /** false: a page failed, the page limit or the tool limit was reached, or the cursor looped. */
  complete: boolean;
  errors: SyncError[];
}

export interface DiscoveryLimits {
  pageTimeoutMs: number;
  maxPages: number;
  maxTools: number;
}

/**
 * Walks every page of tools/list. The page is fetched with a loose schema (the SDK's listTools()
 * throws for a whole page when one tool is malformed) and each tool is checked on its own; a tool
 * that cannot be kept at all (no name) is reported, never dropped silently. `onPage` sees the
 * counts after each page.
 */
export async function discoverTools(
  client: Client,
  limits: DiscoveryLimits,
  onPage?: (soFar: Discovery) => void,
): Promise<Discovery> {
  const out: Discovery = { tools: [], listed: 0, pages: 0, complete: true, errors: [] };
  const seenCursors = new Set<string>();
  let cursor: string | undefined;
  do {
    if (out.pages >= limits.maxPages)
      return stop(
        out,
        McpSyncErrorCode.MCP_LIST_INCOMPLETE,
        `stopped after ${limits.maxPages} pages (MCP_LIST_MAX_PAGES)`,
      );
    let page: z.infer<typeof LoosePage>;
    try {
      page = await client.request({ method: 'tools/list', params: cursor ? { cursor } : {} }, LoosePage, {
        timeout: limits.pageTimeoutMs,
      });
    } catch (e) {
      if (out.pages === 0) throw e;
      return stop(out, McpSyncErrorCode.MCP_LIST_FAILED, `page ${out.pages + 1} of tools/list failed: ${describe(e)}`);
    }
    out.pages += 1;
    out.listed += page.tools.length;
    page.tools.forEach((raw, i) => {
      const named = NamedTool.safeParse(raw);
      if (!named.success) {
        out.errors.push({
          code: McpSyncErrorCode.MCP_TOOL_MALFORMED,
          message: `tool #${i + 1} of page ${out.pages} has no usable name (${named.error.issues[0]?.message ?? 'invalid'}); it cannot be stored`,
        });
        return;
      }
      out.tools.push(named.data as RawTool);
    });
    onPage?.(out);
    if (out.tools.length > limits.maxTools) {
      out.tools.length = limits.maxTools;
      return stop(
        out,
        McpSyncErrorCode.MCP_LIST_INCOMPLETE,
        `the server lists more than ${limits.maxTools} tools (MCP_MAX_TOOLS_PER_SERVER); the rest were not synced`,
      );
    }
    cursor = page.nextCursor || undefined;
    if (cursor !== undefined) {
      if (seenCursors.has(cursor))
        return stop(
          out,
          McpSyncErrorCode.MCP_LIST_INCOMPLETE,
          `the server repeated cursor ${JSON.stringify(cursor.slice(0, 64))}`,
        );
      seenCursors.add(cursor);
    }
  } while (cursor !== undefined);
  return out;
}

function stop(out: Discovery, code: McpSyncErrorCode, message: string): Discovery {
  out.complete = false;
  out.errors.push({ code, message: `${message}; tools missing from the listing were kept` });
  return out;
}
