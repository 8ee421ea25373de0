import { Controller, Module } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { SealedValuesOpen, SealedValuesSeal, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { aad, SecretBox } from '../crypto/secret-box';

/**
 * Internal: sealing for values another service stores (mcp-sync's server secrets and pending
 * authorizations) under the one key ring of Toolplane — the same envelope, keys and rotation as
 * every secret here. The plaintext crosses the bus only inside service seals.
 */
@Controller()
export class SealedValuesController {
  constructor(private readonly box: SecretBox) {}

  @Handles(SealedValuesSeal)
  seal(@Payload() req: RequestOf<typeof SealedValuesSeal>): ReplyOf<typeof SealedValuesSeal> {
    const sealed = this.box.seal(req.plaintext, aad.sealedValue(req));
    return { key_id: sealed.keyId, blob: sealed.blob.toString('base64') };
  }

  @Handles(SealedValuesOpen)
  open(@Payload() req: RequestOf<typeof SealedValuesOpen>): ReplyOf<typeof SealedValuesOpen> {
    const plaintext = this.box.open(
      { keyId: req.key_id, blob: Buffer.from(req.blob, 'base64') },
      aad.sealedValue(req),
      `A sealed ${req.purpose} value`,
    );
    return { plaintext, stale: req.key_id !== this.box.activeKeyId };
  }
}

@Module({ controllers: [SealedValuesController] })
export class SealedValuesModule {}
