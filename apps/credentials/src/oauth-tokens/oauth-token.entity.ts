import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One MCP server's OAuth tokens for one issuer, sealed as a JSON envelope. */
@Entity({ name: 'oauth_tokens', schema: 'credentials' })
export class OAuthTokenEntity {
  @PrimaryColumn({ name: 'org_id', type: 'text' })
  orgId!: string;

  @PrimaryColumn({ name: 'server_id', type: 'text' })
  serverId!: string;

  @PrimaryColumn({ type: 'text' })
  issuer!: string;

  @Column({ name: 'key_id', type: 'text' })
  keyId!: string;

  @Column({ type: 'bytea' })
  ciphertext!: Buffer;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
