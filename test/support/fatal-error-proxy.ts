import { connect, createServer, type Server, type Socket } from 'node:net';
import { listenOnLoopback, type ProxyTarget, targetOf } from './tcp-proxy';

/**
 * A loopback proxy in front of PostgreSQL that can end a connection the way `pg_terminate_backend`
 * or a restart does on a busy machine: the FATAL error (57P01) in the same TCP chunk as a
 * ReadyForQuery, so that node-postgres handles both in one go. Two moments can be chosen:
 *
 * - `armNewConnection()`: the ReadyForQuery that completes a new connection's startup, while the
 *   pool hands the fresh client out;
 * - `armAfterNextStatement()`: the ReadyForQuery that ends the next statement on a connection
 *   already open, while the pool hands the released client to a caller that was waiting for it.
 */
export class FatalErrorProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private armedNew = 0;
  private armedNext = 0;
  injected = 0;

  constructor(private readonly target: ProxyTarget) {}

  static forUrl(url: string): FatalErrorProxy {
    return new FatalErrorProxy(targetOf(url));
  }

  /** Listens on a free loopback port; returns `url` rewritten to go through the proxy. */
  async start(url: string): Promise<string> {
    this.server = createServer((client) => this.accept(client));
    return listenOnLoopback(this.server, url);
  }

  /** The next new connection ends with a FATAL as its startup completes. */
  armNewConnection(): void {
    this.armedNew++;
  }

  /** The next statement to complete on an open connection is followed by a FATAL. */
  armAfterNextStatement(): void {
    this.armedNext++;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private accept(client: Socket): void {
    const upstream = connect(this.target.port, this.target.host);
    let atStartup = this.armedNew > 0;
    if (atStartup) this.armedNew--;
    let started = false;
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        this.sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    // Server to client, message by message; whatever precedes a ReadyForQuery passes through.
    let pending = Buffer.alloc(0);
    upstream.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      let offset = 0;
      while (pending.length - offset >= 5) {
        const type = String.fromCharCode(pending[offset]);
        const length = pending.readInt32BE(offset + 1);
        if (pending.length - offset < 1 + length) break;
        offset += 1 + length;
        if (type !== 'Z') continue;
        const fatalNow = (!started && atStartup) || (started && this.armedNext > 0);
        started = true;
        if (!fatalNow) continue;
        if (!atStartup) this.armedNext--;
        atStartup = false;
        this.injected++;
        client.end(Buffer.concat([pending.subarray(0, offset), fatalMessage()]));
        upstream.destroy();
        return;
      }
      if (offset > 0) client.write(pending.subarray(0, offset));
      pending = pending.subarray(offset);
    });
  }
}

/** ErrorResponse: FATAL 57P01, as a backend terminated by pg_terminate_backend sends it. */
const fatalMessage = (): Buffer => {
  const fields = Buffer.concat([
    ...[
      ['S', 'FATAL'],
      ['V', 'FATAL'],
      ['C', '57P01'],
      ['M', 'terminating connection due to administrator command'],
    ].map(([code, value]) => Buffer.from(`${code}${value}\u0000`, 'utf8')),
    Buffer.from([0]),
  ]);
  const header = Buffer.alloc(5);
  header.write('E', 0, 'latin1');
  header.writeInt32BE(4 + fields.length, 1);
  return Buffer.concat([header, fields]);
};
