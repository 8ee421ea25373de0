import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode, SealedValuesOpen, SealedValuesSeal } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import type { ExecutorConfig } from '../executor.config';

/** Plaintext per sealed payload at most (a seal request and its reply must each fit a NATS message). */
export const MAX_SEALED_CHARS = 256 * 1024;

export interface SealedPayload {
  payloadId: string;
  orgId: string;
  keyId: string;
  blob: string;
}

/**
 * Call arguments and results are stored only sealed under the one key ring of Toolplane: the
 * credentials service seals and opens them (SealedValuesSeal/Open, purpose `execution`, inside
 * service seals on the bus), the executor stores the blobs. A blob is bound to its org and payload
 * id: copied to another row or org it does not open. Values are JSON; they never reach a log line.
 */
@Injectable()
export class PayloadSealer {
  constructor(
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: ExecutorConfig,
  ) {}

  async seal(orgId: string, payloadId: string, value: unknown): Promise<SealedPayload> {
    const r = await this.messaging.request(
      SealedValuesSeal,
      { org_id: orgId, purpose: 'execution', ref: payloadId, plaintext: JSON.stringify(value) },
      this.opts('seal'),
    );
    return { payloadId, orgId, keyId: r.key_id, blob: r.blob };
  }

  async open<T>(p: SealedPayload): Promise<T> {
    const r = await this.messaging.request(
      SealedValuesOpen,
      { org_id: p.orgId, purpose: 'execution', ref: p.payloadId, key_id: p.keyId, blob: p.blob },
      this.opts('open'),
    );
    return JSON.parse(r.plaintext) as T;
  }

  private opts(what: 'seal' | 'open') {
    return {
      timeoutMs: this.config.CREDENTIALS_REQUEST_TIMEOUT_MS,
      // A record outlives the request that writes it: the outcome of a cancelled call is sealed all the same.
      detached: what === 'seal',
      down: {
        code: ErrorCode.CREDENTIALS_UNAVAILABLE,
        what: `The credentials service did not ${what} the execution's stored values`,
      },
    };
  }
}
