import { callJson as launcherCall, launcherBase as launcherBaseOf, type CallSpec, type LauncherSettings, type SandboxLayout } from '@toolplane/sandbox';
import type { E2bRunnerConfig } from '../runner-e2b.config';

/**
 * The isolation policy of runner-e2b, in the sandbox: the shared launcher of libs/sandbox
 * (python/launcher.py, remote-launcher.ts) with runner-e2b's settings.
 */
export { EXIT_BUSY, MAX_FRAME_BYTES, parseReport, proofJson, proofOf, RunReport, SandboxLayout, SetupReport, SUPPORT_DIGEST, SUPPORT_FILES, type CallSpec, type Proof } from '@toolplane/sandbox';

export function launcherSettings(c: E2bRunnerConfig): LauncherSettings {
  return { python: c.E2B_PYTHON, node: c.E2B_NODE, toolUid: c.E2B_TOOL_UID, watch: c.E2B_WATCH_PATHS };
}

export function launcherBase(c: E2bRunnerConfig, layout: SandboxLayout) {
  return launcherBaseOf(launcherSettings(c), layout);
}

export function callJson(c: E2bRunnerConfig, layout: SandboxLayout, s: CallSpec): string {
  return launcherCall(launcherSettings(c), layout, s);
}
