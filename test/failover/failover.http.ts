import { request } from 'node:http';

export interface HttpAnswer {
  status: number;
  body: string;
}

/**
 * One HTTP request to a loopback REST API (Patroni's, etcd's) with a timeout; a refused or
 * timed-out request answers status 0 with the error as body, never throws.
 */
export const httpRequest = (port: number, path: string, options: { method?: 'GET' | 'POST'; json?: unknown; timeoutMs?: number } = {}): Promise<HttpAnswer> =>
  new Promise((resolve) => {
    const payload = options.json === undefined ? undefined : JSON.stringify(options.json);
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        timeout: options.timeoutMs ?? 2_000,
        headers: payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        response.on('error', (error) => resolve({ status: 0, body: String(error) }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timed out after ${options.timeoutMs ?? 2_000} ms`)));
    req.on('error', (error) => resolve({ status: 0, body: String(error) }));
    req.end(payload);
  });

export const httpStatus = async (port: number, path: string, timeoutMs = 1_000): Promise<number> => (await httpRequest(port, path, { timeoutMs })).status;
