import { credsAuthenticator, type ConnectionOptions } from '@nats-io/transport-node';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { AppName } from '@toolplane/contracts';
import { EventSigner, EventVerifier, KeyDirectory, ServiceSealer, type EventSignatures } from '@toolplane/messaging';
import type { BaseConfig } from './env';

/** Connection options of one app from its config: servers, credentials, TLS and its own inbox prefix. */
export function natsConnectOptions(config: BaseConfig, name: string): ConnectionOptions {
  const tls =
    config.NATS_TLS_CA || config.NATS_TLS_CERT || config.NATS_TLS_KEY
      ? {
          ...(config.NATS_TLS_CA ? { caFile: config.NATS_TLS_CA } : {}),
          ...(config.NATS_TLS_CERT ? { certFile: config.NATS_TLS_CERT } : {}),
          ...(config.NATS_TLS_KEY ? { keyFile: config.NATS_TLS_KEY } : {}),
        }
      : undefined;
  return {
    servers: config.NATS_URL.split(','),
    name,
    ...(config.NATS_USER ? { user: config.NATS_USER, pass: config.NATS_PASSWORD ?? '' } : {}),
    ...(config.NATS_TOKEN ? { token: config.NATS_TOKEN } : {}),
    ...(config.NATS_CREDS
      ? { authenticator: credsAuthenticator(new Uint8Array(readFileSync(config.NATS_CREDS))) }
      : {}),
    ...(tls ? { tls } : {}),
    inboxPrefix: config.NATS_INBOX_PREFIX ?? `_INBOX.${name}`,
  };
}

export function serviceKeysDir(config: BaseConfig): string {
  return resolve(
    config.SERVICE_KEYS_DIR ?? (config.TOOLPLANE_PROFILE === 'development' ? '.toolplane/keys' : '/etc/toolplane/keys'),
  );
}

/** This app's sealer: its own key from SERVICE_KEYS_DIR (created in development), the others' public keys beside it. */
export function serviceSealer(config: BaseConfig, app: AppName): ServiceSealer {
  return serviceIdentity(config, app).sealer;
}

/**
 * This app's identity from SERVICE_KEYS_DIR: its sealer, and its event signer (the Ed25519 key
 * derived from its own key) with the check of received events against every app's `.sign.pub`.
 */
export function serviceIdentity(config: BaseConfig, app: AppName): { sealer: ServiceSealer; events: EventSignatures } {
  const dir = new KeyDirectory(serviceKeysDir(config));
  const own = dir.ownKey(app, config.TOOLPLANE_PROFILE === 'development');
  return {
    sealer: new ServiceSealer(app, own.privateKey, dir, config.SERVICE_CLOCK_SKEW_MS),
    events: {
      signer: new EventSigner(app, own.signing.privateKey),
      verifier: new EventVerifier(dir, config.SERVICE_CLOCK_SKEW_MS),
    },
  };
}
