import { Module } from '@nestjs/common';
import { ExaClient } from './exa.client';
import { FetchWebpageService } from './fetch-webpage.service';
import { WebController } from './web.controller';
import { WebMetrics } from './web.metrics';
import { WebSearchService } from './web-search.service';

@Module({ controllers: [WebController], providers: [ExaClient, FetchWebpageService, WebSearchService, WebMetrics] })
export class WebModule {}
