import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { EXECUTION_EVENTS, ExecutionWork } from '@toolplane/contracts';
import { ensureEventsStream, MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG, TransactionalOutbox } from '@toolplane/platform';
import type { DataSource } from 'typeorm';
import type { ExecutorConfig } from '../executor.config';
import { ensureWorkStream } from './work-stream';

/**
 * The executor's transactional outbox (libs/platform): execution events and async work are written
 * in the transaction that changes the record, published after it commits (by the writer, else by
 * the relay every replica runs). Nothing is published for a change that rolled back; nothing a
 * committed change staged is lost.
 */
@Injectable()
export class ExecutionOutbox extends TransactionalOutbox {
  constructor(
    @InjectDataSource() ds: DataSource,
    messaging: MessagingClient,
    @Inject(APP_CONFIG) config: ExecutorConfig,
  ) {
    super(ds, messaging, {
      table: 'executor.event_outbox',
      lockPrefix: 'executor.outbox',
      descriptors: [...EXECUTION_EVENTS, ExecutionWork],
      relayEveryMs: config.EXECUTOR_OUTBOX_RELAY_MS,
      relayAfterMs: config.EXECUTOR_OUTBOX_RELAY_AFTER_MS,
      what: 'execution events and work',
      repair: () =>
        Promise.all([
          ensureEventsStream(messaging.nc, messaging.prefix, messaging.streamReplicas),
          ensureWorkStream(messaging.nc, messaging.prefix, config),
        ]),
    });
  }
}
