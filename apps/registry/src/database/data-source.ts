import type { OwnedSchema } from '@toolplane/platform';
import { ToolEntity } from '../catalog/tool.entity';
import { ToolsetEntity } from '../catalog/toolset.entity';
import { CreateTools1763880000000 } from './migrations/1763880000000-create-tools';
import { CreateExternalToolPages1764400000000 } from './migrations/1764400000000-create-external-tool-pages';
import { CreateEventOutbox1764500000000 } from './migrations/1764500000000-create-event-outbox';
import { CreateAgentTools1764600000000 } from './migrations/1764600000000-create-agent-tools';
import { CreateToolsets1764700000000 } from './migrations/1764700000000-create-toolsets';

/** The registry owns the `registry` schema and nothing else. */
export const REGISTRY_DB: OwnedSchema = {
  schema: 'registry',
  entities: [ToolEntity, ToolsetEntity],
  migrations: [
    CreateTools1763880000000,
    CreateExternalToolPages1764400000000,
    CreateEventOutbox1764500000000,
    CreateAgentTools1764600000000,
    CreateToolsets1764700000000,
  ],
};
