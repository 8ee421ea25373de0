import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'sandbox_configs', schema: 'credentials' })
export class SandboxConfigEntity {
  @PrimaryColumn({ name: 'org_id', type: 'text' })
  orgId!: string;

  @PrimaryColumn({ type: 'text' })
  provider!: string;

  @Column({ type: 'jsonb' })
  config!: Record<string, unknown>;

  @Column({ name: 'created_at', type: 'timestamptz', insert: false, update: false })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
