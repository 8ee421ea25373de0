export * from './process.driver';
export * from './sandbox.types';
export * from './tool-error';
