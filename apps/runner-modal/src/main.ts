import { main } from '@toolplane/platform';
import { loadModalRunnerConfig } from './runner-modal.config';
import { RunsModule } from './runs/runs.module';

main(() => ({ name: 'runner-modal', config: loadModalRunnerConfig(), module: RunsModule }));
