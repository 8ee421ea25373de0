import type { Msg } from '@nats-io/transport-node';
import { ErrorCode, Headers, ToolplaneError, type AppName, type Principal, type RequestDescriptor } from '@toolplane/contracts';
import type { ServiceSealer } from './service-seal';
import type { TokenVerifier } from './token-verifier';

export interface Admitted {
  principal: Principal;
  body: Uint8Array;
  /** A service's request: its reply is sealed back to it. */
  sealedFor?: { app: AppName; nonce: string };
}

const forbidden = (message: string) => new ToolplaneError(ErrorCode.FORBIDDEN, message, undefined, false);

/**
 * The trust boundary, run on every message before any handler: a service's sealed message opens
 * only if it really comes from that service, and internal subjects admit only their callers; a
 * public request needs exactly one valid org token with the subject's scope. Nothing else gets in.
 */
export class EdgeAuth {
  constructor(
    readonly sealer: ServiceSealer,
    readonly tokens: TokenVerifier,
  ) {}

  async admit(d: RequestDescriptor, msg: Msg): Promise<Admitted> {
    const seal = msg.headers?.get(Headers.SERVICE_SEAL) ?? '';
    if (seal) {
      // The wire subject, deployment prefix included: a seal never opens in another deployment.
      const opened = this.sealer.openRequest(msg.subject, seal, msg.data);
      const sealedFor = { app: opened.from, nonce: opened.nonce };
      if (d.visibility === 'internal' && !d.callers!.includes(opened.from)) {
        throw Object.assign(forbidden(`Service ${opened.from} may not call ${d.subject}`), { sealedFor });
      }
      return { principal: { kind: 'service', app: opened.from }, body: opened.body, sealedFor };
    }
    if (d.visibility === 'internal') {
      throw new ToolplaneError(ErrorCode.UNAUTHENTICATED, `${d.subject} is internal: only Toolplane services may call it`, undefined, false);
    }
    const principal = await this.tokens.verify(msg.headers?.values(Headers.AUTHORIZATION, 'insensitive') ?? []);
    if (principal.kind === 'operator' && d.scope !== 'admin') {
      throw forbidden(`A platform operator token is accepted on toolplane.v1.auth.* only: mint an org token for ${d.subject}`);
    }
    if (principal.kind === 'tenant' && !principal.scopes.has(d.scope!)) throw forbidden(`The token lacks the scope ${d.scope} that ${d.subject} needs`);
    return { principal, body: msg.data };
  }

  /** A tenant may name only its own org. (Operators and services act for any org.) */
  static checkOrg(principal: Principal, request: unknown): void {
    if (principal.kind !== 'tenant' || typeof request !== 'object' || request === null || !('org_id' in request)) return;
    const orgId = (request as { org_id: unknown }).org_id;
    if (orgId !== principal.org) throw forbidden(`The token is for org ${principal.org}; the request names another org`);
  }
}

/** The error a handler threw, and whether its reply must be sealed (set by admit when it refuses a known service). */
export function sealedForOf(e: unknown): Admitted['sealedFor'] {
  return (e as { sealedFor?: Admitted['sealedFor'] } | undefined)?.sealedFor;
}
