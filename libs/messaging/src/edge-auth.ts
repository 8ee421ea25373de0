import type { Msg } from '@nats-io/transport-node';
import type { z } from 'zod';
import {
  ErrorCode,
  Headers,
  ToolplaneError,
  type AppName,
  type Principal,
  type RequestDescriptor,
} from '@toolplane/contracts';
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
      throw new ToolplaneError(
        ErrorCode.UNAUTHENTICATED,
        `${d.subject} is internal: only Toolplane services may call it`,
        undefined,
        false,
      );
    }
    const principal = await this.tokens.verify(msg.headers?.values(Headers.AUTHORIZATION, 'insensitive') ?? []);
    if (principal.kind === 'operator' && d.scope !== 'admin') {
      throw forbidden(
        `A platform operator token is accepted on toolplane.v1.auth.* only: mint an org token for ${d.subject}`,
      );
    }
    if (principal.kind === 'tenant' && !principal.scopes.has(d.scope!))
      throw forbidden(`The token lacks the scope ${d.scope} that ${d.subject} needs`);
    return { principal, body: msg.data };
  }

  /** A tenant may name only its own org. (Operators and services act for any org.) */
  static checkOrg(principal: Principal, request: unknown): void {
    if (principal.kind !== 'tenant' || typeof request !== 'object' || request === null || !('org_id' in request))
      return;
    const orgId = (request as { org_id: unknown }).org_id;
    if (orgId !== principal.org)
      throw forbidden(`The token is for org ${principal.org}; the request names another org`);
  }

  /**
   * A token bound to an end user acts as that user, on every subject whose request takes a
   * `user_id` (tools.execute, execute-batch, executions.list, secrets.*, auth.tokens.create…): a
   * request naming another user is FORBIDDEN, one naming none gets the token's user filled in here,
   * before the contract is checked, so the handler, the records and the events all see it. (A bound
   * token thus manages only its user's secrets and mints only tokens bound to the same user.) Run
   * after checkOrg on the decoded body; tokens without a user and services pass untouched.
   */
  static bindEndUser(principal: Principal, d: RequestDescriptor, request: unknown): void {
    if (principal.kind !== 'tenant' || principal.userId === undefined || !requestTakesUserId(d.request)) return;
    if (typeof request !== 'object' || request === null || Array.isArray(request)) return;
    const body = request as { user_id?: unknown };
    if (body.user_id === undefined) {
      body.user_id = principal.userId;
      return;
    }
    // Compared as the contract reads it (trimmed): " alice " is alice, not another user.
    if (typeof body.user_id !== 'string' || body.user_id.trim() !== principal.userId) {
      throw forbidden(`The token is bound to end user ${principal.userId}; the request names another user_id`);
    }
  }
}

/** Request schemas that have a top-level `user_id` field, by schema (worked out once per descriptor). */
const takesUserId = new WeakMap<z.ZodType, boolean>();

/** Whether a request schema has a top-level `user_id` field (through refinements, pipes and unions). */
export function requestTakesUserId(schema: z.ZodType): boolean {
  let known = takesUserId.get(schema);
  if (known === undefined) {
    known = hasField(schema, 'user_id', 0);
    takesUserId.set(schema, known);
  }
  return known;
}

function hasField(schema: unknown, field: string, depth: number): boolean {
  const def = (schema as { _zod?: { def?: Record<string, unknown> } } | undefined)?._zod?.def;
  if (!def || depth > 8) return false;
  switch (def.type) {
    case 'object':
      return Object.hasOwn(def.shape as object, field);
    case 'pipe':
      return hasField(def.in, field, depth + 1);
    case 'union':
      return (def.options as unknown[]).some((o) => hasField(o, field, depth + 1));
    case 'optional':
    case 'nullable':
    case 'default':
    case 'readonly':
      return hasField(def.innerType, field, depth + 1);
    default:
      return false;
  }
}

/** The error a handler threw, and whether its reply must be sealed (set by admit when it refuses a known service). */
export function sealedForOf(e: unknown): Admitted['sealedFor'] {
  return (e as { sealedFor?: Admitted['sealedFor'] } | undefined)?.sealedFor;
}
