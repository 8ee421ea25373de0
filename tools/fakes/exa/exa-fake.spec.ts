import { Exa, ExaError } from 'exa-js';
import { startExaFake, type ExaFake } from './exa-fake';

/** The unmodified official SDK against the fake: the paths, headers, bodies and errors it uses. */
describe('Exa fake', () => {
  let fake: ExaFake;
  beforeAll(async () => {
    fake = await startExaFake({ apiKeys: ['good-key'] });
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.requests.length = 0;
    fake.fault = undefined;
  });

  it('answers search with results shaped as the SDK reads them, and records the request', async () => {
    const exa = new Exa('good-key', fake.url);
    const res = await exa.search('red foxes', {
      numResults: 2,
      type: 'auto',
      includeDomains: ['zoo.test'],
      contents: {
        text: true,
        highlights: { numSentences: 2, highlightsPerUrl: 3, query: 'red foxes' },
        summary: { query: 'red foxes' },
      },
    });
    expect(res.results.map((r) => r.url)).toEqual(['https://zoo.test/red-foxes/1', 'https://zoo.test/red-foxes/2']);
    expect(res.results[0]).toMatchObject({
      title: 'Result 1 for red foxes',
      text: expect.any(String),
      summary: expect.any(String),
    });
    expect((res.results[0] as { highlights: string[] }).highlights).toHaveLength(3);
    expect(fake.requests).toEqual([
      expect.objectContaining({
        method: 'POST',
        path: '/search',
        apiKey: 'good-key',
        userAgent: expect.stringMatching(/^exa-node /),
        body: expect.objectContaining({ query: 'red foxes', numResults: 2, includeDomains: ['zoo.test'] }),
      }),
    ]);
  });

  it('answers getContents for registered pages, an error status for others', async () => {
    fake.pages.set('https://news.test/a', { title: 'A', text: 'alpha', author: 'Ann' });
    const exa = new Exa('good-key', fake.url);
    const res = await exa.getContents(['https://news.test/a', 'https://news.test/missing'], { text: true });
    expect(res.results).toEqual([
      expect.objectContaining({ url: 'https://news.test/a', title: 'A', text: 'alpha', author: 'Ann' }),
    ]);
    expect(fake.requests[0]).toMatchObject({
      path: '/contents',
      body: { urls: ['https://news.test/a', 'https://news.test/missing'], text: true },
    });
  });

  it.each([
    ['unauthorized', 401],
    ['rate_limited', 429],
    ['server_error', 500],
    ['malformed_json', 200],
  ] as const)('injects %s: the SDK throws an ExaError with status %d', async (fault, status) => {
    fake.fault = fault;
    const err = await new Exa('good-key', fake.url).search('q', { contents: false }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExaError);
    expect((err as ExaError).statusCode).toBe(status);
  });

  it('refuses a key it does not know with 401', async () => {
    const err = await new Exa('bad-key', fake.url).search('q').catch((e: unknown) => e);
    expect((err as ExaError).statusCode).toBe(401);
    expect((err as Error).message).toContain('Invalid API key');
  });
});
