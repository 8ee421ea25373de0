export * from './env';
export * from './health';
export * from './platform.module';
export * from './run-service';
export * from './database';
export * from './org-cache';
export * from './egress-policy';
export * from './secret-masker';
