import { z } from 'zod';
import { OrgId } from './common';
import { defineRequest } from './descriptor';

/**
 * The web built-ins (fetch_webpage, web_search): the executor hands a call to `web-tools`, a fetch
 * worker with no service secrets, which reaches the web only through the one SSRF policy
 * (libs/platform outbound). Both answer the text the tool returns to the model; a call that could
 * not run answers a typed error (URL_SCHEME_UNSUPPORTED, EGRESS_REFUSED, CONTENT_TOO_LARGE,
 * CONTENT_TYPE_UNSUPPORTED, FETCH_FAILED, FETCH_TIMEOUT, SEARCH_NOT_CONFIGURED).
 */

/** An Exa API key: the agent's secret `EXA_API_KEY` (or the org's), resolved by the executor; else web-tools' own config. */
const ExaApiKey = z.string().min(1).max(512);

/** What the tool returns to the model, exactly (the executor truncates it to the tool's return_char_limit). */
export const WebToolReply = z.strictObject({ text: z.string() });

/** Internal: fetch one web page (http/https only) as readable text — Exa contents first when a key is at hand, else a direct pinned fetch. */
export const WebFetchWebpage = defineRequest({
  subject: 'toolplane.internal.v1.web.fetch-webpage',
  visibility: 'internal',
  servedBy: 'web-tools',
  callers: ['executor'],
  summary:
    'Fetch one http(s) page through the SSRF policy (pinned DNS, redirects re-checked, size and time caps) and answer it as markdown.',
  request: z.strictObject({
    org_id: OrgId,
    /** As the model gave it: any scheme but http/https answers URL_SCHEME_UNSUPPORTED naming it. */
    url: z.string().min(1).max(8192),
    exa_api_key: ExaApiKey.optional(),
  }),
  reply: WebToolReply,
});

/** web_search's arguments as BUILTINS.md names them (the executor already checked them against the tool's schema). */
export const WebSearchArgs = z.object({
  query: z.string().max(8192),
  num_results: z.number().optional(),
  category: z.string().max(256).optional(),
  include_text: z.boolean().optional(),
  include_domains: z.array(z.string().max(2048)).max(1000).optional(),
  exclude_domains: z.array(z.string().max(2048)).max(1000).optional(),
  start_published_date: z.string().max(64).optional(),
  end_published_date: z.string().max(64).optional(),
  user_location: z.string().max(64).optional(),
});
export type WebSearchArgs = z.infer<typeof WebSearchArgs>;

/**
 * Internal: one Exa search, mapped as the reference does. Its own failures (Exa refusing, failing
 * or answering garbage) are the tool's answer `{"query","error":"Search failed: …"}`, not an error;
 * no key anywhere is SEARCH_NOT_CONFIGURED.
 */
export const WebSearch = defineRequest({
  subject: 'toolplane.internal.v1.web.web-search',
  visibility: 'internal',
  servedBy: 'web-tools',
  callers: ['executor'],
  summary: 'Search the web through Exa (the official SDK) and answer the results as the reference JSON text.',
  request: z.strictObject({ org_id: OrgId, args: WebSearchArgs, exa_api_key: ExaApiKey.optional() }),
  reply: WebToolReply,
});
