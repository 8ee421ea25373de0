import { main } from '@toolplane/platform';
import { loadCredentialsConfig } from './credentials.config';
import { CredentialsModule } from './credentials.module';

main(() => ({ name: 'credentials', config: loadCredentialsConfig(), module: CredentialsModule }));
