import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A pending authorization (an add, the org's again, or an end user's connection), single use, until expires_at. */
@Entity({ name: 'oauth_authorizations', schema: 'mcp' })
export class OAuthAuthorizationEntity {
  @PrimaryColumn({ type: 'text' })
  state!: string;

  @Column({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ name: 'server_id', type: 'text' })
  serverId!: string;

  @Column({ name: 'server_name', type: 'text' })
  serverName!: string;

  /** An end user's connection of an `account: "user"` server: only that user completes it, for themself. */
  @Column({ name: 'user_id', type: 'text', nullable: true })
  userId?: string | null;

  /** SecretSealer over {server input, PKCE verifier}. */
  @Column({ type: 'bytea' })
  sealed!: Buffer;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;
}
