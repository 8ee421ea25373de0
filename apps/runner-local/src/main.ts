import { main } from '@toolplane/platform';
import { loadRunnerConfig } from './runner-local.config';
import { RunsModule } from './runs/runs.module';

main(() => ({ name: 'runner-local', config: loadRunnerConfig(), module: RunsModule }));
