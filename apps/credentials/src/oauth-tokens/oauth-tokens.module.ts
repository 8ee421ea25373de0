import { Module } from '@nestjs/common';
import { OAuthTokensController } from './oauth-tokens.controller';
import { OAuthTokensRepository } from './oauth-tokens.repository';
import { OAuthTokensService } from './oauth-tokens.service';

@Module({ controllers: [OAuthTokensController], providers: [OAuthTokensService, OAuthTokensRepository] })
export class OAuthTokensModule {}
