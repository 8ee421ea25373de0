import type { OwnedSchema } from '@toolplane/platform';
import { CreateExecutions1765200000000 } from './migrations/1765200000000-create-executions';
import { AddExecutionUser1765600000000 } from './migrations/1765600000000-add-execution-user';
import { AddExecutionToolset1765700000000 } from './migrations/1765700000000-add-execution-toolset';

/** The executor owns the `executor` schema (execution records) and nothing else. */
export const EXECUTOR_DB: OwnedSchema = {
  schema: 'executor',
  entities: [],
  migrations: [CreateExecutions1765200000000, AddExecutionUser1765600000000, AddExecutionToolset1765700000000],
};
