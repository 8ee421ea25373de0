import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'tools', schema: 'registry' })
export class ToolEntity {
  @Column({ type: 'bigint', insert: false, update: false })
  seq!: string;

  @PrimaryColumn({ type: 'text' })
  id!: string;

  @Column({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ name: 'tool_type', type: 'text' })
  toolType!: string;

  @Column({ type: 'text', nullable: true })
  description!: string | null;

  @Column({ name: 'source_type', type: 'text', nullable: true })
  sourceType!: string | null;

  @Column({ name: 'source_code', type: 'text', nullable: true })
  sourceCode!: string | null;

  @Column({ name: 'json_schema', type: 'json', nullable: true })
  jsonSchema!: Record<string, unknown> | null;

  @Column({ name: 'args_json_schema', type: 'json', nullable: true })
  argsJsonSchema!: Record<string, unknown> | null;

  @Column({ type: 'text', array: true, default: () => "'{}'" })
  tags!: string[];

  @Column({ name: 'return_char_limit', type: 'integer', default: 50000 })
  returnCharLimit!: number;

  @Column({ name: 'pip_requirements', type: 'json', nullable: true })
  pipRequirements!: Array<{ name: string; version?: string | null }> | null;

  @Column({ name: 'npm_requirements', type: 'json', nullable: true })
  npmRequirements!: Array<{ name: string; version?: string | null }> | null;

  @Column({ name: 'default_requires_approval', type: 'boolean', nullable: true })
  defaultRequiresApproval!: boolean | null;

  @Column({ name: 'enable_parallel_execution', type: 'boolean', nullable: true })
  enableParallelExecution!: boolean | null;

  @Column({ name: 'created_by_id', type: 'text', nullable: true })
  createdById!: string | null;

  @Column({ name: 'last_updated_by_id', type: 'text', nullable: true })
  lastUpdatedById!: string | null;

  @Column({ name: 'metadata', type: 'json', nullable: true })
  metadata!: Record<string, unknown> | null;

  @Column({ name: 'project_id', type: 'text', nullable: true })
  projectId!: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', insert: false, update: false })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', insert: false })
  updatedAt!: Date;
}
