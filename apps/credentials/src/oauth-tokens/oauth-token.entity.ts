import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One MCP server's OAuth tokens for one issuer (the org's, or one end user's), sealed as a JSON envelope. */
@Entity({ name: 'oauth_tokens', schema: 'credentials' })
export class OAuthTokenEntity {
  @PrimaryColumn({ name: 'org_id', type: 'text' })
  orgId!: string;

  @PrimaryColumn({ name: 'server_id', type: 'text' })
  serverId!: string;

  /** '' for the org's tokens; the end user's id for a connected account. */
  @PrimaryColumn({ name: 'user_id', type: 'text', default: '' })
  userId!: string;

  @PrimaryColumn({ type: 'text' })
  issuer!: string;

  @Column({ name: 'key_id', type: 'text' })
  keyId!: string;

  @Column({ type: 'bytea' })
  ciphertext!: Buffer;

  /** The granted scope and the access token's expiry: shown by connections.list without opening the record. */
  @Column({ type: 'text', nullable: true })
  scope!: string | null;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt!: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
