import { main } from '@toolplane/platform';
import { loadExecutorConfig } from './executor.config';
import { ExecutorModule } from './executor.module';

main(() => ({ name: 'executor', config: loadExecutorConfig(), module: ExecutorModule }));
