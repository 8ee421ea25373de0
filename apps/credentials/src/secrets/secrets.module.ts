import { Module } from '@nestjs/common';
import { SecretsController } from './secrets.controller';
import { SecretsRepository } from './secrets.repository';
import { SecretsService } from './secrets.service';

@Module({ controllers: [SecretsController], providers: [SecretsService, SecretsRepository], exports: [SecretsService] })
export class SecretsModule {}
