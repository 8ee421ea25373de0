import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** One encrypted value. '' in agent_id / user_id / provider means "none" / "none" / "every provider". */
@Entity({ name: 'secrets', schema: 'credentials' })
export class SecretEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ type: 'text' })
  scope!: 'sandbox' | 'agent' | 'user';

  @Column({ name: 'agent_id', type: 'text' })
  agentId!: string;

  /** The end user of a `user` secret (part of its sealed value's associated data). */
  @Column({ name: 'user_id', type: 'text' })
  userId!: string;

  @Column({ type: 'text' })
  provider!: string;

  @Column({ type: 'text' })
  key!: string;

  @Column({ type: 'text', nullable: true })
  description!: string | null;

  @Column({ type: 'boolean' })
  mask!: boolean;

  @Column({ name: 'key_id', type: 'text' })
  keyId!: string;

  @Column({ type: 'bytea' })
  ciphertext!: Buffer;

  @Column({ name: 'created_at', type: 'timestamptz', insert: false, update: false })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
