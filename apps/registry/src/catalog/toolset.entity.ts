import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'toolsets', schema: 'registry' })
export class ToolsetEntity {
  @Column({ type: 'bigint', insert: false, update: false })
  seq!: string;

  @PrimaryColumn({ type: 'text' })
  id!: string;

  @Column({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text', nullable: true })
  description!: string | null;

  @Column({ type: 'text', nullable: true })
  instructions!: string | null;

  @Column({ name: 'tool_ids', type: 'text', array: true, default: () => "'{}'" })
  toolIds!: string[];

  @Column({ name: 'tool_names', type: 'text', array: true, default: () => "'{}'" })
  toolNames!: string[];

  @Column({ type: 'text', array: true, default: () => "'{}'" })
  tags!: string[];

  /** The set's override of its tools' default_requires_approval; null: each tool's default applies. */
  @Column({ name: 'requires_approval', type: 'boolean', nullable: true })
  requiresApproval!: boolean | null;

  @Column({ name: 'created_at', type: 'timestamptz', insert: false, update: false })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', insert: false })
  updatedAt!: Date;
}
