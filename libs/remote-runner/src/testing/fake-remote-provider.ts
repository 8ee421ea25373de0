import type { Proof } from '@toolplane/sandbox';
import type { RemoteEnvironment } from '../remote-pool';
import type { ReadySandbox, RemoteEnvironmentRequest, RemoteProvider } from '../remote-provider';

/** A sandbox of the fake provider. */
export interface FakeBox {
  sandboxId: string;
}

/** An environment request of the fake provider (the core's fields only). */
export const fakeRequest = (org: string, o: Partial<RemoteEnvironmentRequest> = {}): RemoteEnvironmentRequest => ({
  org,
  fingerprint: 'f1',
  lanes: 1,
  pip: [],
  ...o,
});

/**
 * The remote-runner core's provider, faked in process for the pool's unit specs: creates finish
 * when the test says (or at once with `auto`, or fail with `failWith`), discovery returns what the
 * test put in `earlier`, proofs pass unless `dirty`; kills are recorded. The call's side is not used.
 */
export class FakeRemoteProvider implements RemoteProvider<RemoteEnvironmentRequest, FakeBox> {
  readonly name = 'e2b';
  readonly label = 'E2B';
  readonly configPrefix = 'E2B';
  readonly pending: Array<{ org: string; finish: () => void; fail: (e: Error) => void }> = [];
  readonly killed: string[] = [];
  readonly kills: Array<{ id: string; reason: string }> = [];
  /** Sandboxes an earlier runner left, per environment key: discovery returns (and forgets) them. */
  readonly earlier = new Map<string, FakeBox[]>();
  auto = false;
  failWith?: Error;
  dirty = false;
  /** Whether the sandboxes it makes have Node. */
  node = true;
  proves = 0;
  private n = 0;

  create(env: RemoteEnvironment<RemoteEnvironmentRequest, FakeBox>): Promise<ReadySandbox<FakeBox>> {
    const ready = { box: { sandboxId: `sbx-${++this.n}` }, proof: { provedAt: 1, state: {} }, node: this.node };
    if (this.failWith) return Promise.reject(this.failWith);
    if (this.auto) return Promise.resolve(ready);
    return new Promise((resolve, reject) =>
      this.pending.push({ org: env.org, finish: () => resolve(ready), fail: reject }),
    );
  }
  async discover(env: RemoteEnvironment<RemoteEnvironmentRequest, FakeBox>): Promise<Array<ReadySandbox<FakeBox>>> {
    const found = this.earlier.get(env.key) ?? [];
    this.earlier.delete(env.key);
    return found.map((box) => ({ box, proof: { provedAt: 1, state: {} }, node: true }));
  }
  async prove(): Promise<Proof | undefined> {
    this.proves++;
    return this.dirty ? undefined : { provedAt: 2, state: {} };
  }
  async kill(_env: unknown, box: FakeBox, reason: string): Promise<void> {
    this.killed.push(box.sandboxId);
    this.kills.push({ id: box.sandboxId, reason });
  }
  request(): RemoteEnvironmentRequest {
    throw new Error('not used by the pool');
  }
  keys(req: RemoteEnvironmentRequest) {
    return { key: `k-${req.org}-${req.fingerprint}-${req.lanes}`, family: `fam-${req.org}`, requirementsHash: null };
  }
  id(box: FakeBox): string {
    return box.sandboxId;
  }
  readonly launcher: Provider['launcher'] = undefined as never;
  python: Provider['python'] = notUsed;
  moduleDir: Provider['moduleDir'] = notUsed;
  write: Provider['write'] = notUsed;
  start: Provider['start'] = notUsed;
  read: Provider['read'] = notUsed;
  isGone: Provider['isGone'] = notUsed;
  providerError: Provider['providerError'] = notUsed;
  scrub: Provider['scrub'] = notUsed;
  noNode: Provider['noNode'] = notUsed;
}

type Provider = RemoteProvider<RemoteEnvironmentRequest, FakeBox>;

function notUsed(): never {
  throw new Error('the call side is not used by the pool');
}
