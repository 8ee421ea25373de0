import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { EgressPolicy } from '@toolplane/platform';
import { prepareSupportDir, slotArgs, type SandboxLayout } from './bwrap.args';
import { buildNetworkFor, type BuildNetworkFor } from './build-network';
import { CgroupManager, type CgroupOptions } from './cgroups';
import { attachSlirp, egressRoutes, type Route, type SlirpOptions } from './network';
import { seccompProgram } from './seccomp';
import type { SlotSpawn } from './slot';

export class IsolationUnavailableError extends Error {}

export interface IsolationOptions {
  bwrapPath: string;
  workRoot: string;
  /** Unprivileged ids of the sandboxes when the runner is root. */
  runAs?: { uid: number; gid: number };
  cgroups?: CgroupOptions;
  /** The egress policy of network-enabled calls and of package builds. */
  egress: EgressPolicy;
  /** slirp4netns (user-mode networking); network-enabled calls need it, builds that reach an index too. */
  slirpPath?: string;
  /** Refuse to start when network-enabled calls cannot be served (slirp4netns missing). */
  requireNetwork?: boolean;
}

/**
 * The isolation policy of the local runner: how a sandbox is made — bwrap arguments and mounts,
 * the seccomp filter, the cgroup of each slot, and the network namespace and egress routes of
 * network-enabled slots and package builds. The slot pool and the environment store ask it for
 * sandboxes; it knows nothing of pools, environments or NATS.
 */
export class IsolationPolicy {
  readonly buildNetwork: BuildNetworkFor;
  private readonly routes: Route[];

  private constructor(
    private readonly o: IsolationOptions,
    readonly supportDir: string,
    readonly cgroups: CgroupManager,
    private readonly slirp: Omit<SlirpOptions, 'dns'> | undefined,
  ) {
    this.routes = egressRoutes(o.egress);
    this.buildNetwork = buildNetworkFor({
      policy: o.egress,
      slirp: slirp && { ...slirp, dns: false },
      tmpDir: path.join(o.workRoot, 'build-hosts'),
    });
  }

  /** Checks what isolation needs here and writes the support files. Throws IsolationUnavailableError. */
  static async prepare(o: IsolationOptions): Promise<IsolationPolicy> {
    if (!existsSync(o.bwrapPath))
      throw new IsolationUnavailableError(
        `bubblewrap is not installed (${o.bwrapPath} is missing; apt-get install bubblewrap, or run \`npm start\` / tools/dev/prerequisites.sh as root)`,
      );
    let program: Buffer;
    try {
      program = seccompProgram();
    } catch (e) {
      throw new IsolationUnavailableError(`cannot build the seccomp filter: ${(e as Error).message}`);
    }
    const slirpPath = o.slirpPath ?? '/usr/bin/slirp4netns';
    const slirp = existsSync(slirpPath)
      ? { slirpPath, root: o.runAs !== undefined || process.getuid?.() === 0 }
      : undefined;
    if (o.requireNetwork && !slirp) {
      throw new IsolationUnavailableError(
        `network-enabled tools need slirp4netns (${slirpPath} is missing; apt-get install slirp4netns), or set RUNNER_ALLOW_NETWORK=false`,
      );
    }
    let cgroups: CgroupManager;
    try {
      cgroups = CgroupManager.detect(o.cgroups);
    } catch (e) {
      throw new IsolationUnavailableError((e as Error).message);
    }
    await fs.mkdir(o.workRoot, { recursive: true, mode: 0o711 });
    await fs.chmod(o.workRoot, 0o711);
    const supportDir = await prepareSupportDir(
      o.workRoot,
      program,
      o.runAs?.uid ?? process.getuid?.() ?? 65534,
      o.runAs?.gid ?? process.getgid?.() ?? 65534,
    );
    return new IsolationPolicy(o, supportDir, cgroups, slirp);
  }

  get networkAvailable(): boolean {
    return this.slirp !== undefined;
  }

  /** How to start one slot of this layout (its cgroup made now; its network attached when it asks). */
  slotSpawn(layout: Omit<SandboxLayout, 'supportDir' | 'network' | 'cgroupFds'> & { network: boolean }): SlotSpawn {
    if (layout.network && !this.slirp)
      throw new IsolationUnavailableError('network-enabled sandboxes need slirp4netns, which is not installed');
    const cgroup = this.cgroups.slotGroup();
    let cgroupFds: number[] = [];
    try {
      cgroupFds = cgroup?.openProcs() ?? [];
    } catch (e) {
      void cgroup?.remove();
      throw e;
    }
    const slirp = this.slirp;
    return {
      bwrapPath: this.o.bwrapPath,
      args: slotArgs({
        ...layout,
        supportDir: this.supportDir,
        network: layout.network ? this.routes : undefined,
        cgroupFds: cgroupFds.length,
      }),
      ...(this.o.runAs ?? {}),
      cgroup,
      cgroupFds,
      attachNetwork: layout.network && slirp ? (pid) => attachSlirp(pid, { ...slirp, dns: true }) : undefined,
    };
  }

  close(): Promise<void> {
    return this.cgroups.close();
  }
}
