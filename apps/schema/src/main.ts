import { main } from '@toolplane/platform';
import { loadSchemaConfig } from './schema.config';
import { SchemasModule } from './schemas/schemas.module';

main(() => ({ name: 'schema', config: loadSchemaConfig(), module: SchemasModule }));
