import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { BuiltinToolsRepository } from './builtin-tools.repository';
import { BuiltinToolsService } from './builtin-tools.service';

/** The built-in tools every org has (BUILTINS.md): made per org on first use, raised to the deployed version at start-up. */
@Module({
  imports: [EventsModule],
  providers: [BuiltinToolsService, BuiltinToolsRepository],
  exports: [BuiltinToolsService],
})
export class BuiltinsModule {}
