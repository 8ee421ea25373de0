import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import TurndownService from 'turndown';

/** What fetch_webpage makes of an HTML page: its readable part as markdown, and what it says about itself. */
export interface ReadablePage {
  title?: string;
  author?: string;
  published?: string;
  markdown: string;
}

type DomDocument = ReturnType<typeof parseHTML>['document'];
type ReadabilityDocument = ConstructorParameters<typeof Readability>[0];

const turndown = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '-' });
// Nothing executable or invisible reaches the model.
turndown.remove([
  'script',
  'style',
  'noscript',
  'iframe',
  'object',
  'embed',
  'template',
] as unknown as TurndownService.Filter);

/**
 * HTML → readable markdown: Mozilla's Readability (Firefox Reader View) on a linkedom DOM picks the
 * article and its byline, title and publication time; turndown writes it as markdown. A page
 * Readability finds no article in is converted whole (its body). No script runs: linkedom is a DOM,
 * not a browser.
 */
export function htmlToReadable(html: string, url?: string): ReadablePage {
  const { document } = parseHTML(html);
  const meta = pageMeta(document);
  let article: ReturnType<Readability['parse']> = null;
  try {
    article = new Readability(document as unknown as ReadabilityDocument, { charThreshold: 200 }).parse();
  } catch {
    article = null;
  }
  const body = article?.content ?? document.body?.innerHTML ?? html;
  return {
    title: clean(article?.title) ?? meta.title,
    author: clean(article?.byline) ?? meta.author,
    published: clean(article?.publishedTime) ?? meta.published,
    markdown: toMarkdown(body, url),
  };
}

function toMarkdown(html: string, _url?: string): string {
  return turndown
    .turndown(html)
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** The page as the model reads it: a heading, who wrote it and when (when the page says), the source, then the text. */
export function renderPage(page: ReadablePage, url: string): string {
  const head: string[] = [];
  if (page.title) head.push(`# ${page.title}`, '');
  if (page.author) head.push(`Author: ${page.author}`);
  if (page.published) head.push(`Published: ${page.published}`);
  head.push(`Source: ${url}`, '');
  return `${head.join('\n')}\n${page.markdown}\n`;
}

function pageMeta(doc: DomDocument): { title?: string; author?: string; published?: string } {
  const content = (selector: string) => clean(doc.querySelector(selector)?.getAttribute('content'));
  return {
    title: content('meta[property="og:title"]') ?? clean(doc.querySelector('title')?.textContent),
    author: content('meta[name="author"]') ?? content('meta[property="article:author"]'),
    published:
      content('meta[property="article:published_time"]') ??
      content('meta[name="date"]') ??
      clean(doc.querySelector('time[datetime]')?.getAttribute('datetime')),
  };
}

function clean(s: string | null | undefined): string | undefined {
  const t = s?.replace(/\s+/g, ' ').trim();
  return t ? t : undefined;
}
