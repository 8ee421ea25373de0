import { Module } from '@nestjs/common';
import { EventOutbox } from './event-outbox';

/** The one outbox of the registry (one relay per replica), shared by every feature that writes events. */
@Module({ providers: [EventOutbox], exports: [EventOutbox] })
export class EventsModule {}
