import { Logger } from '@nestjs/common';
import { EndUserId, ErrorCode, OrgId, Scope, TOKEN_ISSUER, ToolplaneError } from '@toolplane/contracts';
import {
  createRemoteJWKSet,
  customFetch,
  decodeJwt,
  errors,
  jwtVerify,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import { isLoopback, type GatewayConfig, type OidcIssuerConfig } from '../mcp-gateway.config';
import { AuthRefused, type BearerVerifier, type Caller } from './caller';

/** How far an IdP's clock may be off for `exp` and `nbf`. */
const CLOCK_TOLERANCE_S = 30;
/** Discovery documents and key sets larger than this are refused (an IdP's are a few KiB). */
const MAX_METADATA_BYTES = 256 * 1024;
const FETCH_TIMEOUT_MS = 5_000;
/** After a failed discovery, requests fail at once for this long instead of each asking the IdP again. */
const DISCOVERY_RETRY_MS = 30_000;
/** jose's key set: a kid it does not know refetches at most this often; keys are kept this long. */
const JWKS_COOLDOWN_MS = 30_000;
const JWKS_MAX_AGE_MS = 10 * 60_000;

/** Where a configured issuer's signing keys come from (the default: its discovery document, then its JWKS). */
export type KeySource = (issuer: OidcIssuerConfig) => JWTVerifyGetKey;

export interface OidcVerifierOptions {
  /** GATEWAY_PUBLIC_URL: an `aud` naming the gateway itself is accepted besides the endpoint's resource URI. */
  publicUrl?: string;
  /** Development: an issuer's metadata may name a plain-http loopback jwks_uri. */
  development: boolean;
  keys?: KeySource;
}

/**
 * JWT access tokens of the identity providers an operator configured (GATEWAY_OIDC_ISSUERS): the
 * MCP authorization spec's resource server side. A token is taken when its (unverified) `iss` is a
 * configured issuer; it is then verified against that issuer's keys (found through its OIDC
 * discovery document, fetched once with a timeout and a size bound, then jose's cached key set),
 * with an asymmetric algorithm of the issuer's list, its exact `iss`, an `aud` naming this endpoint
 * (RFC 8707) or the gateway or what the operator configured, `exp` (required) and `nbf`.
 *
 * The org and the end user come from claims the operator names; scopes are mapped to Toolplane's.
 * A token is refused with a reason that names claims, never their values: neither the token nor
 * its claims reach a log line, a span or an error.
 */
export class OidcVerifier implements BearerVerifier {
  private readonly log = new Logger(OidcVerifier.name);
  private readonly issuers = new Map<string, { config: OidcIssuerConfig; keys: JWTVerifyGetKey }>();

  constructor(
    issuers: readonly OidcIssuerConfig[],
    private readonly opts: OidcVerifierOptions,
  ) {
    const source = opts.keys ?? ((issuer: OidcIssuerConfig) => this.remoteKeys(issuer));
    for (const config of issuers) this.issuers.set(config.issuer, { config, keys: source(config) });
  }

  static fromConfig(config: GatewayConfig): OidcVerifier | null {
    if (!config.GATEWAY_OIDC_ISSUERS.length) return null;
    return new OidcVerifier(config.GATEWAY_OIDC_ISSUERS, {
      publicUrl: config.GATEWAY_PUBLIC_URL,
      development: config.TOOLPLANE_PROFILE === 'development',
    });
  }

  accepts(token: string): boolean {
    const iss = unverifiedIssuer(token);
    return iss !== undefined && iss !== TOKEN_ISSUER && this.issuers.has(iss);
  }

  async verify(token: string, resource: string): Promise<Caller> {
    const iss = unverifiedIssuer(token);
    const issuer = iss === undefined ? undefined : this.issuers.get(iss);
    if (!issuer) throw new AuthRefused(401, 'invalid_token', 'The token’s issuer is not one this gateway trusts');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, issuer.keys, {
        issuer: issuer.config.issuer,
        audience: issuer.config.audience ?? this.defaultAudience(resource),
        algorithms: issuer.config.algorithms,
        clockTolerance: CLOCK_TOLERANCE_S,
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (e) {
      throw this.refusal(e, issuer.config.issuer);
    }
    return callerOf(issuer.config, payload);
  }

  /** The endpoint's resource URI and the gateway's own base URL (both with and without a trailing slash). */
  private defaultAudience(resource: string): string[] {
    const base = this.opts.publicUrl?.replace(/\/+$/, '') ?? resource.replace(/\/mcp\/(agents|toolsets)\/[^/]+$/, '');
    return [...new Set([resource, base, `${base}/`])];
  }

  private refusal(e: unknown, issuer: string): Error {
    if (e instanceof ToolplaneError || e instanceof AuthRefused) return e;
    if (e instanceof errors.JWTExpired) return new AuthRefused(401, 'invalid_token', 'The token has expired');
    if (e instanceof errors.JWTClaimValidationFailed) {
      if (e.reason === 'missing') return new AuthRefused(401, 'invalid_token', `The token has no "${e.claim}" claim`);
      if (e.claim === 'aud')
        return new AuthRefused(
          401,
          'invalid_token',
          'The token was not issued for this resource (its audience does not name it)',
        );
      if (e.claim === 'nbf' || e.claim === 'iat')
        return new AuthRefused(401, 'invalid_token', 'The token is not valid yet');
      return new AuthRefused(401, 'invalid_token', `The token's "${e.claim}" claim is not valid`);
    }
    if (e instanceof errors.JOSEAlgNotAllowed)
      return new AuthRefused(401, 'invalid_token', 'The token is signed with an algorithm this issuer is not allowed');
    if (e instanceof errors.JWSSignatureVerificationFailed)
      return new AuthRefused(401, 'invalid_token', 'The token’s signature is not valid');
    if (e instanceof errors.JWKSNoMatchingKey || e instanceof errors.JWKSMultipleMatchingKeys)
      return new AuthRefused(401, 'invalid_token', 'No signing key of the issuer matches the token');
    if (e instanceof errors.JWTInvalid || e instanceof errors.JWSInvalid || e instanceof errors.JOSENotSupported)
      return new AuthRefused(401, 'invalid_token', 'The token is not a valid signed JWT');
    // The IdP's keys could not be had (timeout, refused, not JSON…): not the token's fault.
    this.log.warn(`keys of ${issuer} unavailable: ${e instanceof Error ? e.message : String(e)}`);
    return new ToolplaneError(
      ErrorCode.SERVICE_UNAVAILABLE,
      'The identity provider’s signing keys could not be fetched: retry later',
      undefined,
      true,
    );
  }

  /** Discovery once (retried after a failure, not on every request), then jose's remote key set with its cache and cooldown. */
  private remoteKeys(issuer: OidcIssuerConfig): JWTVerifyGetKey {
    let keys: Promise<JWTVerifyGetKey> | undefined;
    let failure: { at: number; error: Error } | undefined;
    const fetchImpl = boundedFetch;
    return async (header, token) => {
      if (failure && Date.now() - failure.at < DISCOVERY_RETRY_MS) throw failure.error;
      keys ??= this.jwksUri(issuer).then((uri) =>
        createRemoteJWKSet(new URL(uri), {
          timeoutDuration: FETCH_TIMEOUT_MS,
          cooldownDuration: JWKS_COOLDOWN_MS,
          cacheMaxAge: JWKS_MAX_AGE_MS,
          [customFetch]: fetchImpl,
        }),
      );
      try {
        const set = await keys;
        failure = undefined;
        return await set(header, token);
      } catch (e) {
        if (!(e instanceof errors.JOSEError) || e instanceof errors.JWKSTimeout) {
          keys = undefined;
          failure = { at: Date.now(), error: e as Error };
        }
        throw e;
      }
    };
  }

  private async jwksUri(issuer: OidcIssuerConfig): Promise<string> {
    if (issuer.jwks_uri) return issuer.jwks_uri;
    const url = `${issuer.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    const res = await boundedFetch(url, {
      headers: new Headers({ accept: 'application/json' }),
      method: 'GET',
      redirect: 'manual',
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
    if (res.status !== 200) throw new Error(`discovery answered ${res.status}`);
    let metadata: { issuer?: unknown; jwks_uri?: unknown };
    try {
      metadata = (await res.json()) as typeof metadata;
    } catch {
      throw new Error('discovery document is not JSON');
    }
    // OpenID Connect Discovery §4.3: the document must name the issuer it was fetched for.
    if (metadata.issuer !== issuer.issuer) throw new Error('discovery document names another issuer');
    const jwks = typeof metadata.jwks_uri === 'string' ? URL.parse(metadata.jwks_uri) : null;
    if (
      !jwks ||
      !(jwks.protocol === 'https:' || (jwks.protocol === 'http:' && this.opts.development && isLoopback(jwks.href)))
    ) {
      throw new Error('discovery document has no usable jwks_uri (https)');
    }
    this.log.log(`keys of ${issuer.issuer} at ${jwks.href}`);
    return jwks.href;
  }
}

/** The caller a verified token stands for: its org and user from the configured claims, its scopes mapped. */
export function callerOf(config: OidcIssuerConfig, payload: JWTPayload): Caller {
  const org = 'value' in config.org ? config.org.value : payload[config.org.claim];
  if (typeof org !== 'string' || !OrgId.safeParse(org).success) {
    throw new AuthRefused(
      401,
      'invalid_token',
      `The token's "${'claim' in config.org ? config.org.claim : 'org'}" claim (the org) is missing or not an org id`,
    );
  }
  const claim = payload[config.user_claim];
  const user = EndUserId.safeParse(typeof claim === 'number' && Number.isFinite(claim) ? String(claim) : claim);
  if (!user.success)
    throw new AuthRefused(
      401,
      'invalid_token',
      `The token's "${config.user_claim}" claim (the end user) is missing or not a user id`,
    );
  if (typeof payload.sub !== 'string' || !payload.sub)
    throw new AuthRefused(401, 'invalid_token', 'The token has no "sub" claim');
  return {
    org,
    scopes: scopesOf(config, payload),
    identity: `oidc:${config.issuer}#${payload.sub}`,
    userId: user.data,
    via: 'oidc',
  };
}

/** The token's scopes (a space-separated string or an array; `scp` when the default `scope` is absent) as Toolplane scopes. */
export function scopesOf(config: OidcIssuerConfig, payload: JWTPayload): Set<Scope> {
  let raw = payload[config.scope_claim];
  if (raw === undefined && config.scope_claim === 'scope') raw = payload.scp;
  const granted =
    typeof raw === 'string'
      ? raw.split(' ')
      : Array.isArray(raw)
        ? raw.filter((s): s is string => typeof s === 'string')
        : [];
  const out = new Set<Scope>();
  for (const s of granted) {
    const mapped = config.scope_map ? (Object.hasOwn(config.scope_map, s) ? config.scope_map[s] : []) : [s];
    for (const m of mapped) {
      const scope = Scope.safeParse(m);
      if (scope.success && scope.data !== 'admin') out.add(scope.data);
    }
  }
  return out;
}

function unverifiedIssuer(token: string): string | undefined {
  try {
    const { iss } = decodeJwt(token);
    return typeof iss === 'string' ? iss : undefined;
  } catch {
    return undefined;
  }
}

/** fetch with redirects left unfollowed and a body of at most MAX_METADATA_BYTES (jose's key set fetches through it too). */
async function boundedFetch(
  url: string,
  init: { headers: Headers; method: 'GET'; redirect: 'manual'; signal: AbortSignal },
): Promise<Response> {
  const res = await fetch(url, init);
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > MAX_METADATA_BYTES)
    throw new Error(`response larger than ${MAX_METADATA_BYTES} bytes`);
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (res.body) {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.length;
      if (size > MAX_METADATA_BYTES) throw new Error(`response larger than ${MAX_METADATA_BYTES} bytes`);
      chunks.push(chunk);
    }
  }
  return new Response(res.status === 204 || res.status === 304 ? null : Buffer.concat(chunks), {
    status: res.status,
    headers: res.headers,
  });
}
