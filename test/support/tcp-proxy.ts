import { createServer, type Server, type Socket, connect } from 'node:net';

export interface ProxyTarget {
  host: string;
  port: number;
}

/** The host and port a PostgreSQL URL points at. */
export const targetOf = (url: string): ProxyTarget => {
  const parsed = new URL(url);
  return { host: parsed.hostname, port: Number(parsed.port || 5432) };
};

/** Starts `server` on a free loopback port; returns `url` rewritten to go through it. */
export const listenOnLoopback = async (server: Server, url: string): Promise<string> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('proxy has no address');
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(address.port);
  return parsed.toString();
};

/**
 * A loopback TCP proxy in front of PostgreSQL that a test can cut and restore, to play a database
 * outage (or a network partition) for the connections that go through it, and only those.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private down = false;
  private muted = false;

  constructor(private readonly target: ProxyTarget) {}

  static forUrl(url: string): TcpProxy {
    return new TcpProxy(targetOf(url));
  }

  /** Starts listening on a free loopback port; returns `url` rewritten to go through the proxy. */
  async start(url: string): Promise<string> {
    this.server = createServer((client) => this.accept(client));
    return listenOnLoopback(this.server, url);
  }

  /** Drops every open connection and refuses new ones until restore(). */
  cut(): void {
    this.down = true;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  restore(): void {
    this.down = false;
  }

  /**
   * Keeps forwarding what clients send but drops every byte the server answers, on open and new
   * connections alike: a statement reaches the server and commits, and its reply is lost.
   */
  mute(): void {
    this.muted = true;
  }

  unmute(): void {
    this.muted = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private accept(client: Socket): void {
    if (this.down) {
      client.destroy();
      return;
    }
    const upstream = connect(this.target.port, this.target.host);
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
    upstream.on('data', (chunk: Buffer) => {
      if (!this.muted) client.write(chunk);
    });
  }
}
