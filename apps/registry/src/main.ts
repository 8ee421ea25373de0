import { main } from '@toolplane/platform';
import { loadRegistryConfig } from './registry.config';
import { RegistryModule } from './registry.module';

main(() => ({ name: 'registry', config: loadRegistryConfig(), module: RegistryModule }));
