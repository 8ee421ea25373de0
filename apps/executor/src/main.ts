import { main } from '@toolplane/platform';
import { loadExecutorConfig } from './executor.config';
import { ExecutionsModule } from './executions/executions.module';

main(() => ({ name: 'executor', config: loadExecutorConfig(), module: ExecutionsModule }));
