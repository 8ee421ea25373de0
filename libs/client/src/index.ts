export { API, apiEntries, methodPath, type CallOptions, type Facade, type Method, type RetryPolicy } from './api';
export { ToolplaneClient, type ClientOptions } from './client';
export { ClientErrorCode, isToolplaneError, ToolplaneError } from './errors';
export { type EventsOptions, type ToolplaneEvent } from './events';
export { backoffDelay, DEFAULT_RETRY, isIdempotent } from './retry';
