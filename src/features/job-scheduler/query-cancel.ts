import { connect } from 'node:net';

/** The CancelRequest code of the PostgreSQL protocol (1234 << 16 | 5678). */
const CANCEL_REQUEST_CODE = 80877102;
/** How long a cancel request may take to be delivered before its socket is dropped. */
const CANCEL_DELIVERY_MS = 2_000;

interface CancellableClient {
  processID?: unknown;
  secretKey?: unknown;
  connectionParameters?: { host?: unknown; port?: unknown };
}

const ignore = (): void => undefined;

/**
 * Asks the server to cancel what `client`'s backend is running, as libpq's PQcancel does: a new
 * connection to the same host and port carrying the backend's process id and secret key. Best
 * effort and fire-and-forget (PgBouncer forwards it too): a statement the lease gave up on
 * client-side stops holding locks and a connection slot on the server instead of waiting on.
 */
export const requestCancel = (client: unknown): void => {
  const { processID, secretKey, connectionParameters } = (client ?? {}) as CancellableClient;
  const host = connectionParameters?.host;
  const port = Number(connectionParameters?.port ?? 5432);
  if (typeof processID !== 'number' || typeof secretKey !== 'number' || typeof host !== 'string') return;
  const socket = host.startsWith('/') ? connect(`${host}/.s.PGSQL.${port}`) : connect(port, host);
  socket.on('error', ignore);
  socket.setTimeout(CANCEL_DELIVERY_MS, () => socket.destroy());
  socket.unref();
  socket.on('connect', () => {
    const message = Buffer.alloc(16);
    message.writeInt32BE(16, 0);
    message.writeInt32BE(CANCEL_REQUEST_CODE, 4);
    message.writeInt32BE(processID, 8);
    message.writeInt32BE(secretKey, 12);
    socket.end(message);
  });
};
