export * from './logger';
export * from './telemetry';
