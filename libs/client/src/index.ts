export { API, apiEntries, methodPath, type CallOptions, type Facade, type Method, type RetryPolicy } from './api';
export { ToolplaneClient, type ClientOptions } from './client';
export { ClientErrorCode, isToolplaneError, ToolplaneError } from './errors';
export { isEvent, type EventsOptions, type ToolplaneEvent } from './events';
// The event descriptors, for isEvent() (their payload schemas check events too).
export {
  ConnectionAuthorized,
  ConnectionExpired,
  ConnectionRefreshed,
  ConnectionRevoked,
  EVENTS,
  McpServerProgressed,
  McpServerRemoved,
  McpServerSynced,
  ToolCreated,
  ToolDeleted,
  ToolsetDeleted,
  ToolsetUpserted,
  ToolUpdated,
} from '@toolplane/contracts';
export { backoffDelay, DEFAULT_RETRY, isIdempotent } from './retry';
// The contract types of requests, replies and events (bundled into the published declarations).
export type {
  ErrorBody,
  EventDescriptor,
  EventOf,
  ExecutionRecord,
  McpServer,
  McpSyncReport,
  ReplyOf,
  RequestDescriptor,
  RequestIn,
  Tool,
  ToolExecutionResult,
  Toolset,
  ToolsetTool,
} from '@toolplane/contracts';
