import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A token's metadata. The token string is shown once when minted and never stored. */
@Entity({ name: 'auth_tokens', schema: 'credentials' })
export class AuthTokenEntity {
  @PrimaryColumn({ type: 'text' })
  id!: string;

  /** null: a platform operator token. */
  @Column({ name: 'org_id', type: 'text', nullable: true })
  orgId!: string | null;

  /** The end user the token is bound to (signed into it as `uid`); null: it acts for the org. */
  @Column({ name: 'user_id', type: 'text', nullable: true })
  userId!: string | null;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text', array: true })
  scopes!: string[];

  @Column({ name: 'key_id', type: 'text' })
  keyId!: string;

  /** Who minted it: a token id, or `cli`. */
  @Column({ name: 'created_by', type: 'text' })
  createdBy!: string;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt!: Date | null;
}
