import { htmlToReadable, renderPage } from './readable';

const filler = (n: number) =>
  Array.from(
    { length: n },
    (_, i) =>
      `<p>Paragraph ${i}: the quick brown fox jumps over the lazy dog, again and again, for the reader's sake.</p>`,
  ).join('');

describe('htmlToReadable', () => {
  const article = `<!doctype html><html><head><title>Site | A fox story</title>
    <meta name="author" content="Ada Lovelace"><meta property="article:published_time" content="2026-01-02T03:04:05Z"></head>
    <body><nav><a href="/">Home</a> <a href="/about">About</a></nav>
    <article><h1>A fox story</h1><p>The <strong>fox</strong> reads <a href="https://example.com/more">more</a>.</p>${filler(12)}
    <ul><li>one</li><li>two</li></ul><script>steal()</script><style>p{}</style></article>
    <footer>Copyright footer</footer></body></html>`;

  it('keeps the article as markdown, with its title, author and publication time, and drops navigation, scripts and styles', () => {
    const sut = htmlToReadable(article, 'https://news.test/fox');
    expect(sut.title).toContain('A fox story');
    expect(sut.author).toBe('Ada Lovelace');
    expect(sut.published).toBe('2026-01-02T03:04:05Z');
    expect(sut.markdown).toContain('**fox**');
    expect(sut.markdown).toContain('[more](https://example.com/more)');
    expect(sut.markdown).toMatch(/^- +one$/m);
    expect(sut.markdown).not.toContain('steal()');
    expect(sut.markdown).not.toContain('p{}');
    expect(sut.markdown).not.toContain('About');
  });

  it('renders a heading, author, date and source before the text; omits what the page does not say', () => {
    const text = renderPage(htmlToReadable(article), 'https://news.test/fox');
    expect(text).toMatch(
      /^# .*A fox story\n\nAuthor: Ada Lovelace\nPublished: 2026-01-02T03:04:05Z\nSource: https:\/\/news.test\/fox\n/,
    );
    const bare = renderPage(htmlToReadable('<html><body><p>just text</p></body></html>'), 'http://x.test/');
    expect(bare).toBe('Source: http://x.test/\n\njust text\n');
  });
});
