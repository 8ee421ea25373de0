export * from './expect-eventually';
export * from './fake-messaging';
export * from './test-service';
export * from './fixtures';
