import { Column, Entity, PrimaryColumn } from 'typeorm';

/** An authorization the server waits for (OAuth: refresh refused, step-up to more scope). */
export interface PendingAuthorization {
  reason: 'reauthorize' | 'step_up';
  authorization_url: string;
  state: string;
  expires_at: string;
  scope: string | null;
}

export interface LastSync {
  at: string;
  trigger: 'add' | 'update' | 'manual' | 'list_changed' | 'periodic';
  ok: boolean;
  report: Record<string, unknown> | null;
  error: string | null;
}

@Entity({ name: 'servers', schema: 'mcp' })
export class McpServerEntity {
  @PrimaryColumn({ type: 'text' })
  id!: string;

  @Column({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text' })
  transport!: 'stdio' | 'sse' | 'streamable_http';

  @Column({ type: 'text', nullable: true })
  command!: string | null;

  @Column({ type: 'json', default: () => "'[]'" })
  args!: string[];

  @Column({ type: 'text', nullable: true })
  url!: string | null;

  @Column({ name: 'tool_prefix', type: 'text', nullable: true })
  toolPrefix!: string | null;

  @Column({ name: 'sealed_secrets', type: 'bytea', nullable: true })
  sealedSecrets!: Buffer | null;

  @Column({ name: 'env_keys', type: 'text', array: true, default: () => "'{}'" })
  envKeys!: string[];

  @Column({ name: 'header_names', type: 'text', array: true, default: () => "'{}'" })
  headerNames!: string[];

  @Column({ name: 'auth_type', type: 'text', nullable: true })
  authType!: 'bearer' | 'oauth' | null;

  /** OAuth: whose account the server acts as (`user`: each end user connects their own). */
  @Column({ type: 'text', default: 'org' })
  account!: 'org' | 'user';

  @Column({ name: 'tool_count', type: 'integer', default: 0 })
  toolCount!: number;

  @Column({ name: 'last_sync', type: 'json', nullable: true })
  lastSync!: LastSync | null;

  @Column({ name: 'pending_authorization', type: 'json', nullable: true })
  pendingAuthorization!: PendingAuthorization | null;

  @Column({ name: 'next_sync_at', type: 'timestamptz' })
  nextSyncAt!: Date;

  @Column({ name: 'created_at', type: 'timestamptz', insert: false, update: false })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', insert: false })
  updatedAt!: Date;
}
