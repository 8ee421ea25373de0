import { main } from '@toolplane/platform';
import { WebModule } from './web/web.module';
import { loadWebToolsConfig } from './web-tools.config';

main(() => ({ name: 'web-tools', config: loadWebToolsConfig(), module: WebModule }));
