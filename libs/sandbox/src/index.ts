export * from './bwrap.driver';
export * from './env-layers';
export * from './process.driver';
export * from './requirements';
export * from './sandbox.types';
export * from './tool-error';
export { DependencyInstallError, type PipIndexOptions } from './venv.builder';
