export * from './logger';
export * from './telemetry';
export * from './spans';
