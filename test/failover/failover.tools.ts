import { execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';

/** The programs the proof runs, where Debian's packages put them, and the package of each. */
export const POSTGRES_BIN_DIR = '/usr/lib/postgresql/15/bin';

export interface FailoverTools {
  patroni: string;
  etcd: string;
  etcdctl: string;
  haproxy: string;
  postgresBinDir: string;
}

const REQUIRED: Array<{ key: keyof FailoverTools; path: string; pkg: string }> = [
  { key: 'patroni', path: '/usr/bin/patroni', pkg: 'patroni' },
  { key: 'etcd', path: '/usr/bin/etcd', pkg: 'etcd-server' },
  { key: 'etcdctl', path: '/usr/bin/etcdctl', pkg: 'etcd-client' },
  { key: 'haproxy', path: '/usr/sbin/haproxy', pkg: 'haproxy' },
  // Patroni needs initdb, pg_ctl, pg_basebackup and pg_rewind besides the server.
  { key: 'postgresBinDir', path: `${POSTGRES_BIN_DIR}/pg_rewind`, pkg: 'postgresql-15' },
];

const executable = (path: string): boolean => {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** The Debian packages whose program is missing. */
export const missingPackages = (): string[] => REQUIRED.filter((tool) => !executable(tool.path)).map((tool) => tool.pkg);

export const INSTALL_HINT = `apt-get update && apt-get install -y --no-install-recommends ${REQUIRED.map((tool) => tool.pkg).join(' ')}`;

/**
 * Installs the missing packages as .ci/run does (root only), then returns every program's path.
 * Without root, or when `install` is false, a missing program is an error that says what to run.
 */
export const ensureTools = (log: (line: string) => void, install = true): FailoverTools => {
  const missing = missingPackages();
  if (missing.length > 0) {
    if (!install || process.getuid?.() !== 0) {
      throw new Error(`missing ${missing.join(', ')}: as root, run ${INSTALL_HINT}`);
    }
    log(`installing ${missing.join(' ')} (apt-get)`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    execFileSync('apt-get', ['update', '-qq'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], { env, stdio: ['ignore', 'ignore', 'inherit'] });
    const still = missingPackages();
    if (still.length > 0) throw new Error(`still missing after apt-get install: ${still.join(', ')}`);
  }
  return {
    patroni: '/usr/bin/patroni',
    etcd: '/usr/bin/etcd',
    etcdctl: '/usr/bin/etcdctl',
    haproxy: '/usr/sbin/haproxy',
    postgresBinDir: POSTGRES_BIN_DIR,
  };
};
