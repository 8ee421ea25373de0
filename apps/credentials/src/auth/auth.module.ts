import { Module } from '@nestjs/common';
import { AuthController } from './auth.controller';
import { AuthRepository } from './auth.repository';
import { AuthService } from './auth.service';
import { TokenMinter } from './token-minter';
import { TokenSigner } from './token-signer';

@Module({ controllers: [AuthController], providers: [AuthService, AuthRepository, TokenSigner, TokenMinter] })
export class AuthModule {}
