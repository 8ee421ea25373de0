import { main } from '@toolplane/platform';
import { loadE2bRunnerConfig } from './runner-e2b.config';
import { RunsModule } from './runs/runs.module';

main(() => ({ name: 'runner-e2b', config: loadE2bRunnerConfig(), module: RunsModule }));
