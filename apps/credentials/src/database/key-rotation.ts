import type { DataSource } from 'typeorm';
import { aad, SecretBox } from '../crypto/secret-box';

export interface RotationReport {
  activeKeyId: string;
  secrets: number;
  webhooks: number;
  oauthTokens: number;
  /** Rows that could not be opened (their key is missing or wrong); left as they were. */
  failed: Array<{ table: string; id: string; keyId: string; reason: string }>;
}

/**
 * Re-seals every value not sealed by the active key under the active key, one row at a time
 * inside a transaction per table (rows are locked while rewritten; nothing is ever decrypted to
 * a log). Idempotent: a second run finds nothing to do.
 */
export async function rotateKeys(ds: DataSource, box: SecretBox): Promise<RotationReport> {
  const report: RotationReport = { activeKeyId: box.activeKeyId, secrets: 0, webhooks: 0, oauthTokens: 0, failed: [] };
  await ds.transaction(async (m) => {
    const rows: Array<{
      id: string;
      org_id: string;
      scope: string;
      agent_id: string;
      user_id: string;
      provider: string;
      key: string;
      key_id: string;
      ciphertext: Buffer;
    }> = await m.query(
      `SELECT id, org_id, scope, agent_id, user_id, provider, key, key_id, ciphertext FROM credentials.secrets WHERE key_id <> $1 FOR UPDATE`,
      [box.activeKeyId],
    );
    for (const r of rows) {
      const ad = aad.secret({
        orgId: r.org_id,
        scope: r.scope,
        agentId: r.agent_id,
        userId: r.user_id,
        provider: r.provider,
        key: r.key,
      });
      try {
        const sealed = box.seal(box.open({ keyId: r.key_id, blob: r.ciphertext }, ad, `secret ${r.key}`), ad);
        await m.query(`UPDATE credentials.secrets SET key_id = $1, ciphertext = $2 WHERE id = $3`, [
          sealed.keyId,
          sealed.blob,
          r.id,
        ]);
        report.secrets++;
      } catch (e) {
        report.failed.push({ table: 'secrets', id: r.id, keyId: r.key_id, reason: (e as Error).message });
      }
    }
  });
  await ds.transaction(async (m) => {
    const rows: Array<{ org_id: string; key_id: string; signing_secret: Buffer }> = await m.query(
      `SELECT org_id, key_id, signing_secret FROM credentials.webhooks WHERE key_id <> $1 FOR UPDATE`,
      [box.activeKeyId],
    );
    for (const r of rows) {
      const ad = aad.webhook(r.org_id);
      try {
        const sealed = box.seal(
          box.open({ keyId: r.key_id, blob: r.signing_secret }, ad, `webhook signing secret of ${r.org_id}`),
          ad,
        );
        await m.query(`UPDATE credentials.webhooks SET key_id = $1, signing_secret = $2 WHERE org_id = $3`, [
          sealed.keyId,
          sealed.blob,
          r.org_id,
        ]);
        report.webhooks++;
      } catch (e) {
        report.failed.push({ table: 'webhooks', id: r.org_id, keyId: r.key_id, reason: (e as Error).message });
      }
    }
  });
  await ds.transaction(async (m) => {
    // An end user's record (user_id not '') is bound to the user too.
    const rows: Array<{
      org_id: string;
      server_id: string;
      user_id: string;
      issuer: string;
      key_id: string;
      ciphertext: Buffer;
    }> = await m.query(
      `SELECT org_id, server_id, user_id, issuer, key_id, ciphertext FROM credentials.oauth_tokens WHERE key_id <> $1 FOR UPDATE`,
      [box.activeKeyId],
    );
    for (const r of rows) {
      const ad = aad.oauthToken({ orgId: r.org_id, serverId: r.server_id, issuer: r.issuer, userId: r.user_id });
      try {
        const sealed = box.seal(
          box.open({ keyId: r.key_id, blob: r.ciphertext }, ad, `OAuth tokens of MCP server ${r.server_id}`),
          ad,
        );
        await m.query(
          `UPDATE credentials.oauth_tokens SET key_id = $1, ciphertext = $2 WHERE org_id = $3 AND server_id = $4 AND user_id = $5 AND issuer = $6`,
          [sealed.keyId, sealed.blob, r.org_id, r.server_id, r.user_id, r.issuer],
        );
        report.oauthTokens++;
      } catch (e) {
        report.failed.push({
          table: 'oauth_tokens',
          id: `${r.org_id}/${r.server_id}${r.user_id ? ' (an end user)' : ''}`,
          keyId: r.key_id,
          reason: (e as Error).message,
        });
      }
    }
  });
  return report;
}
