export * from './bwrap.driver';
export { oneShotArgs, prepareSupportDir, SUPPORT_MOUNT } from './bwrap.args';
export { readableByOthers } from './environment-store';
export { CgroupUnavailableError, type CgroupMode } from './cgroups';
export { egressRoutes, type Route } from './network';
export { seccompProgram } from './seccomp';
export * from './process.driver';
export * from './requirements';
export * from './sandbox.types';
export * from './tool-error';
export { DependencyInstallError, type PipIndexOptions } from './venv.builder';
// The harness protocol, for runners that drive the harness elsewhere (runner-e2b uploads it to remote sandboxes).
export { HARNESS_PATH } from './work-dir';
export { parseResultFrame, type FrameParse, type ResultFrame } from './result-frame';
export { OutputCapture } from './output-capture';
export { failed, toolEnv } from './outcome';
export { prepareScript } from './typescript';
// The launcher of reused remote sandboxes (runner-e2b, runner-modal): python/launcher.py and its reports.
export * from './remote-launcher';
