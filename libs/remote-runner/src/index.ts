export * from './remote-driver';
export * from './remote-pool';
export * from './remote-provider';
export * from './remote-runs.metrics';
export * from './remote-runs.module';
export * from './remote-runs.service';
export * from './remote-env';
