import { Module } from '@nestjs/common';
import { ExecutionOutbox } from './execution-outbox';
import { ExecutionsRepository } from './executions.repository';
import { ExecutorInstance } from './executor-instance';
import { OutcomeWaiter } from './outcome-waiter';
import { PayloadSealer } from './payload-sealer';
import { RecordWriter } from './record-writer';
import { ExecutionRecords } from './records.service';
import { RecordsSweeper } from './records.sweeper';

/**
 * Execution records: the store (Postgres, sealed payloads), its write-behind, outbox, claims and sweeps.
 * Only ExecutionRecords (and the waiter on it) leave this module: every read and every move of a
 * record goes through it, never through the repository.
 */
@Module({
  providers: [
    ExecutionsRepository,
    PayloadSealer,
    ExecutionOutbox,
    RecordWriter,
    ExecutorInstance,
    ExecutionRecords,
    OutcomeWaiter,
    RecordsSweeper,
  ],
  exports: [ExecutionRecords, OutcomeWaiter],
})
export class RecordsModule {}
