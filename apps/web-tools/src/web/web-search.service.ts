import { Injectable, Logger } from '@nestjs/common';
import { ErrorCode, ToolplaneError, type WebSearchArgs } from '@toolplane/contracts';
import { ExaClient } from './exa.client';
import { emptyQuery, formatResults, searchFailed, toExaOptions } from './web-search';

/** web_search as the reference answers it: Exa (official SDK), its failures in the tool's text. */
@Injectable()
export class WebSearchService {
  private readonly log = new Logger(WebSearchService.name);

  constructor(private readonly exa: ExaClient) {}

  async search(args: WebSearchArgs, exaApiKey?: string): Promise<string> {
    if (!args.query.trim()) return emptyQuery(args.query);
    const key = this.exa.keyFor(exaApiKey);
    if (!key)
      throw new ToolplaneError(
        ErrorCode.SEARCH_NOT_CONFIGURED,
        'web_search needs an Exa API key: set the agent secret EXA_API_KEY, or EXA_API_KEY in the web-tools service config',
      );
    try {
      return formatResults(args, await this.exa.search(key, args.query, toExaOptions(args)));
    } catch (e) {
      const why = (e as Error).message;
      this.log.warn(`Exa search failed: ${why}`);
      return searchFailed(args.query, why);
    }
  }
}
