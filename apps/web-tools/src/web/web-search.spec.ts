import { clampNumResults, emptyQuery, formatResults, searchFailed, toExaOptions } from './web-search';

describe('web_search mapping (the reference: letta builtin_tool_executor.web_search)', () => {
  it.each([
    [undefined, 10],
    [0, 1],
    [-5, 1],
    [1, 1],
    [7.9, 7],
    [100, 100],
    [101, 100],
    [1e9, 100],
    [Number.NaN, 10],
  ])('num_results %p is clamped to %p', (n, want) => {
    expect(clampNumResults(n)).toBe(want);
  });

  it('maps every parameter to the SDK option Exa names it by; type auto; highlights and summary for the query', () => {
    const sut = toExaOptions({
      query: 'fox news',
      num_results: 3,
      category: 'news',
      include_text: true,
      include_domains: ['a.test'],
      exclude_domains: ['b.test'],
      start_published_date: '2026-01-01',
      end_published_date: '2026-02-01',
      user_location: 'FR',
    });
    expect(sut).toEqual({
      numResults: 3,
      type: 'auto',
      category: 'news',
      includeDomains: ['a.test'],
      excludeDomains: ['b.test'],
      startPublishedDate: '2026-01-01',
      endPublishedDate: '2026-02-01',
      userLocation: 'FR',
      contents: {
        text: true,
        highlights: { numSentences: 2, highlightsPerUrl: 3, query: 'fox news' },
        summary: { query: 'fox news' },
      },
    });
  });

  it('leaves out what the call did not give (empty lists too); text off by default', () => {
    expect(toExaOptions({ query: 'q', include_domains: [], exclude_domains: [] })).toEqual({
      numResults: 10,
      type: 'auto',
      contents: {
        text: false,
        highlights: { numSentences: 2, highlightsPerUrl: 3, query: 'q' },
        summary: { query: 'q' },
      },
    });
  });

  it('answers {query, results:[{title, url, published_date, author, text?, highlights?, summary?}]}, text only when asked', () => {
    const r = {
      title: 'T',
      url: 'https://x.test/1',
      publishedDate: '2026-01-01',
      author: null,
      text: 'body',
      highlights: ['h1'],
      summary: 'S',
      score: 0.9,
    };
    expect(JSON.parse(formatResults({ query: 'q', include_text: true }, [r as never]))).toEqual({
      query: 'q',
      results: [
        {
          title: 'T',
          url: 'https://x.test/1',
          published_date: '2026-01-01',
          author: null,
          text: 'body',
          highlights: ['h1'],
          summary: 'S',
        },
      ],
    });
    expect(JSON.parse(formatResults({ query: 'q' }, [{ ...r, highlights: [], summary: '' }]))).toEqual({
      query: 'q',
      results: [{ title: 'T', url: 'https://x.test/1', published_date: '2026-01-01', author: null }],
    });
  });

  it('words an empty query and a failure as the reference does', () => {
    expect(JSON.parse(emptyQuery('  '))).toEqual({ error: 'Query cannot be empty', query: '  ' });
    expect(JSON.parse(searchFailed('q', 'boom'))).toEqual({ query: 'q', error: 'Search failed: boom' });
  });
});
