import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '@toolplane/platform';
import { Exa } from 'exa-js';
import type { WebToolsConfig } from '../web-tools.config';
import type { ExaResult, ExaSearchOptions } from './web-search';

/** Clients kept by key (each holds only its key and base URL). */
const MAX_CLIENTS = 64;

/**
 * Exa through its official SDK (exa-js, unmodified), at EXA_BASE_URL. Each call is bounded by a
 * timeout (the SDK has none); errors come back with the key scrubbed from their message.
 */
@Injectable()
export class ExaClient {
  private readonly clients = new Map<string, Exa>();

  constructor(@Inject(APP_CONFIG) private readonly config: WebToolsConfig) {}

  /** The key a call uses: the one it brought (the agent's EXA_API_KEY), else the service's. */
  keyFor(requestKey: string | undefined): string | undefined {
    return requestKey ?? this.config.EXA_API_KEY;
  }

  async search(key: string, query: string, options: ExaSearchOptions): Promise<ExaResult[]> {
    const res = await this.bounded(key, this.config.WEB_SEARCH_TIMEOUT_MS, () =>
      this.client(key).search(query, options as never),
    );
    return resultsOf(res);
  }

  async contents(key: string, url: string, timeoutMs: number): Promise<ExaResult[]> {
    const res = await this.bounded(key, timeoutMs, () => this.client(key).getContents([url], { text: true }));
    return resultsOf(res);
  }

  private client(key: string): Exa {
    let c = this.clients.get(key);
    if (c) return c;
    if (this.clients.size >= MAX_CLIENTS) this.clients.delete(this.clients.keys().next().value!);
    c = new Exa(key, this.config.EXA_BASE_URL);
    this.clients.set(key, c);
    return c;
  }

  private async bounded<T>(key: string, timeoutMs: number, call: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        call(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`Exa did not answer within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } catch (e) {
      throw new Error(scrub(e instanceof Error ? e.message : String(e), key));
    } finally {
      clearTimeout(timer);
    }
  }
}

function resultsOf(res: unknown): ExaResult[] {
  const results = (res as { results?: unknown } | null)?.results;
  if (!Array.isArray(results)) throw new Error('Exa answered without results');
  return results as ExaResult[];
}

/** A message with every occurrence of the key replaced. */
export function scrub(message: string, key: string): string {
  return key ? message.split(key).join('[redacted]') : message;
}
