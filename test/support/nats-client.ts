import { connect, headers as natsHeaders, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { natsUrl } from './env';

/**
 * A raw NATS client, as any agent runtime would use: plain JSON bytes on a subject, no Toolplane
 * library in between.
 */
export class RawClient {
  private constructor(
    readonly nc: NatsConnection,
    readonly prefix: string,
  ) {}

  static async connect(prefix: string): Promise<RawClient> {
    return new RawClient(await connect({ servers: natsUrl(), name: 'test-client' }), prefix);
  }

  subject(s: string): string {
    return this.prefix ? `${this.prefix}.${s}` : s;
  }

  /** Sends `body` (an object is JSON-encoded; a string or bytes go as they are) and parses the reply. */
  async req<T = any>(subject: string, body: unknown, opts: { timeoutMs?: number; headers?: MsgHdrs } = {}): Promise<T> {
    const data = typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
    const msg = await this.nc.request(this.subject(subject), data, { timeout: opts.timeoutMs ?? 15_000, headers: opts.headers });
    return JSON.parse(new TextDecoder().decode(msg.data)) as T;
  }

  headers(): MsgHdrs {
    return natsHeaders();
  }

  async close(): Promise<void> {
    await this.nc.close();
  }
}
