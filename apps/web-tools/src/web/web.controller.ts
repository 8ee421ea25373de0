import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { WebFetchWebpage, WebSearch, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { FetchWebpageService } from './fetch-webpage.service';
import { WebMetrics } from './web.metrics';
import { WebSearchService } from './web-search.service';

@Controller()
export class WebController {
  constructor(
    private readonly fetcher: FetchWebpageService,
    private readonly searcher: WebSearchService,
    private readonly metrics: WebMetrics,
  ) {}

  @Handles(WebFetchWebpage)
  async fetchWebpage(@Payload() req: RequestOf<typeof WebFetchWebpage>): Promise<ReplyOf<typeof WebFetchWebpage>> {
    return { text: await this.metrics.time('fetch_webpage', () => this.fetcher.fetch(req.url, req.exa_api_key)) };
  }

  @Handles(WebSearch)
  async webSearch(@Payload() req: RequestOf<typeof WebSearch>): Promise<ReplyOf<typeof WebSearch>> {
    return { text: await this.metrics.time('web_search', () => this.searcher.search(req.args, req.exa_api_key)) };
  }
}
