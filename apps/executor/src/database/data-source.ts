import type { OwnedSchema } from '@toolplane/platform';
import { CreateExecutions1765200000000 } from './migrations/1765200000000-create-executions';

/** The executor owns the `executor` schema (execution records) and nothing else. */
export const EXECUTOR_DB: OwnedSchema = {
  schema: 'executor',
  entities: [],
  migrations: [CreateExecutions1765200000000],
};
