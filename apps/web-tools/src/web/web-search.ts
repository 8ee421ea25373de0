import type { WebSearchArgs } from '@toolplane/contracts';

/** Exa's search request (the SDK's `search(query, options)`), mapped from web_search's arguments as the reference maps them. */
export interface ExaSearchOptions {
  numResults: number;
  type: 'auto';
  category?: string;
  includeDomains?: string[];
  excludeDomains?: string[];
  startPublishedDate?: string;
  endPublishedDate?: string;
  userLocation?: string;
  contents: {
    text: boolean;
    highlights: { numSentences: number; highlightsPerUrl: number; query: string };
    summary: { query: string };
  };
}

/** An Exa result, as much of it as web_search answers. */
export interface ExaResult {
  title?: string | null;
  url?: string | null;
  publishedDate?: string | null;
  author?: string | null;
  text?: string | null;
  highlights?: string[] | null;
  summary?: string | null;
}

export const DEFAULT_NUM_RESULTS = 10;

/** num_results clamped to 1..100 (a fraction rounds down), 10 when absent. */
export function clampNumResults(n: number | undefined): number {
  if (n === undefined || !Number.isFinite(n)) return DEFAULT_NUM_RESULTS;
  return Math.min(Math.max(Math.trunc(n), 1), 100);
}

/** The reference's mapping: type auto; text only when asked; 2-sentence highlights, 3 per URL, and a summary, both for the query. */
export function toExaOptions(args: WebSearchArgs): ExaSearchOptions {
  const o: ExaSearchOptions = {
    numResults: clampNumResults(args.num_results),
    type: 'auto',
    contents: {
      text: args.include_text ?? false,
      highlights: { numSentences: 2, highlightsPerUrl: 3, query: args.query },
      summary: { query: args.query },
    },
  };
  if (args.category) o.category = args.category;
  if (args.include_domains?.length) o.includeDomains = args.include_domains;
  if (args.exclude_domains?.length) o.excludeDomains = args.exclude_domains;
  if (args.start_published_date) o.startPublishedDate = args.start_published_date;
  if (args.end_published_date) o.endPublishedDate = args.end_published_date;
  if (args.user_location) o.userLocation = args.user_location;
  return o;
}

/** The tool's text: `{"query", "results": [{title, url, published_date, author, text?, highlights?, summary?}]}`. */
export function formatResults(args: WebSearchArgs, results: readonly ExaResult[]): string {
  const out = results.map((r) => {
    const f: Record<string, unknown> = {
      title: r.title ?? null,
      url: r.url ?? null,
      published_date: r.publishedDate ?? null,
      author: r.author ?? null,
    };
    if (args.include_text && r.text) f.text = r.text;
    if (r.highlights?.length) f.highlights = r.highlights;
    if (r.summary) f.summary = r.summary;
    return f;
  });
  return JSON.stringify({ query: args.query, results: out }, null, 2);
}

export function emptyQuery(query: string): string {
  return JSON.stringify({ error: 'Query cannot be empty', query });
}

export function searchFailed(query: string, why: string): string {
  return JSON.stringify({ query, error: `Search failed: ${why}` });
}
