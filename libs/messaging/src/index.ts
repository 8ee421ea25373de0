export * from './codec';
export * from './error-body';
export * from './messaging-client';
export * from './nats-json.server';
export * from './streams';
export * from './subjects';
export * from './trace-context';
