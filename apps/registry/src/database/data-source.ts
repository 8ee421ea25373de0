import type { OwnedSchema } from '@toolplane/platform';
import { ToolEntity } from '../tools/tool.entity';
import { CreateTools1763880000000 } from './migrations/1763880000000-create-tools';

/** The registry owns the `registry` schema and nothing else. */
export const REGISTRY_DB: OwnedSchema = {
  schema: 'registry',
  entities: [ToolEntity],
  migrations: [CreateTools1763880000000],
};
