import { Column, Entity, PrimaryColumn } from 'typeorm';

/** The org's credentials webhook; the signing secret is sealed like any secret. */
@Entity({ name: 'webhooks', schema: 'credentials' })
export class WebhookEntity {
  @PrimaryColumn({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ type: 'text' })
  url!: string;

  @Column({ name: 'timeout_ms', type: 'integer' })
  timeoutMs!: number;

  @Column({ name: 'fail_mode', type: 'text' })
  failMode!: 'open' | 'closed';

  @Column({ name: 'cache_ttl_ms', type: 'integer' })
  cacheTtlMs!: number;

  @Column({ name: 'key_id', type: 'text' })
  keyId!: string;

  @Column({ name: 'signing_secret', type: 'bytea' })
  signingSecret!: Buffer;

  @Column({ name: 'created_at', type: 'timestamptz', insert: false, update: false })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
