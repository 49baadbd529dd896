import type { FailoverMode } from './failover.config';

/**
 * The configuration texts of the cluster under test, as pure functions: one etcd, three Patroni
 * members managing PostgreSQL 15, one HAProxy in front that routes to whichever member answers
 * 200 on Patroni's `/primary`. Everything listens on 127.0.0.1.
 */

export interface MemberPorts {
  name: string;
  rest: number;
  postgres: number;
}

export interface ClusterPorts {
  proxy: number;
  etcdClient: number;
  etcdPeer: number;
  members: MemberPorts[];
}

/** Ports from `base` on: the proxy, etcd, then ten apart the members' REST APIs and PostgreSQLs. */
export const clusterPorts = (base: number, members: number): ClusterPorts => ({
  proxy: base,
  etcdClient: base + 1,
  etcdPeer: base + 2,
  members: Array.from({ length: members }, (_, index) => ({ name: `m${index}`, rest: base + 10 + index, postgres: base + 20 + index })),
});

/** Every port of a cluster, to check they are free before starting. */
export const allPorts = (ports: ClusterPorts): number[] => [
  ports.proxy,
  ports.etcdClient,
  ports.etcdPeer,
  ...ports.members.flatMap((member) => [member.rest, member.postgres]),
];

export const SUPERUSER = { username: 'postgres', password: 'postgres' };
const REPLICATION = { username: 'replicator', password: 'replicator' };

/** Crash failover in about ttl (10 s); the cluster forms in about 6 s. */
export const DCS_TIMING = { ttl: 10, loop_wait: 1, retry_timeout: 5 } as const;

export interface MemberConfigInput {
  mode: FailoverMode;
  scope: string;
  member: MemberPorts;
  etcdClientPort: number;
  memberDir: string;
  dataDir: string;
  binDir: string;
}

/**
 * A Patroni member's configuration. JSON is YAML: no quoting rules to get wrong. Trust on
 * loopback (the simplest auth that works for clients, replication and pg_rewind alike).
 * `synchronous_mode` is set in the bootstrap DCS configuration: it is the cluster's, not a
 * member's. fsync is off: the faults here kill processes, never the kernel, so the page cache
 * keeps every write a process made.
 */
export const patroniConfig = (input: MemberConfigInput): string =>
  JSON.stringify(
    {
      scope: input.scope,
      namespace: '/sdcorejs-failover/',
      name: input.member.name,
      log: { level: 'INFO' },
      restapi: { listen: `127.0.0.1:${input.member.rest}`, connect_address: `127.0.0.1:${input.member.rest}` },
      etcd3: { hosts: [`127.0.0.1:${input.etcdClientPort}`] },
      bootstrap: {
        dcs: {
          ...DCS_TIMING,
          maximum_lag_on_failover: 1_048_576,
          synchronous_mode: input.mode === 'sync',
          postgresql: {
            use_pg_rewind: true,
            use_slots: true,
            parameters: { wal_log_hints: 'on', max_connections: 200, wal_keep_size: '256MB', hot_standby: 'on' },
          },
        },
        initdb: [{ encoding: 'UTF8' }, { locale: 'C' }],
        pg_hba: ['local all all trust', 'host replication replicator 127.0.0.1/32 trust', 'host all all 127.0.0.1/32 trust'],
      },
      postgresql: {
        listen: `127.0.0.1:${input.member.postgres}`,
        connect_address: `127.0.0.1:${input.member.postgres}`,
        data_dir: input.dataDir,
        bin_dir: input.binDir,
        pgpass: `${input.memberDir}/pgpass`,
        authentication: { superuser: SUPERUSER, replication: REPLICATION },
        parameters: { unix_socket_directories: input.memberDir, fsync: 'off' },
        remove_data_directory_on_rewind_failure: true,
        remove_data_directory_on_diverged_timelines: true,
      },
    },
    null,
    2,
  );

/**
 * HAProxy in TCP mode: one frontend, every member a server whose health is Patroni's
 * `GET /primary` (200 on the leader only). A member marked down has its sessions shut at once,
 * so clients do not keep talking to a demoted primary. Server state changes go to stdout.
 */
export const haproxyConfig = (ports: ClusterPorts): string =>
  [
    'global',
    '  maxconn 2000',
    '  log stdout format raw local0 notice',
    'defaults',
    '  mode tcp',
    '  log global',
    '  retries 1',
    '  timeout connect 2s',
    '  timeout client 30m',
    '  timeout server 30m',
    '  timeout check 1s',
    'listen primary',
    `  bind 127.0.0.1:${ports.proxy}`,
    '  option httpchk GET /primary',
    '  http-check expect status 200',
    '  default-server inter 500ms fastinter 250ms downinter 500ms rise 1 fall 2 on-marked-down shutdown-sessions',
    ...ports.members.map((member) => `  server ${member.name} 127.0.0.1:${member.postgres} maxconn 200 check port ${member.rest}`),
    '',
  ].join('\n');

/** etcd v3.4, a single member; Patroni talks to it through its v3 JSON gateway (`etcd3`). */
export const etcdArguments = (ports: ClusterPorts, dataDir: string): string[] => [
  '--name',
  'e0',
  '--data-dir',
  dataDir,
  '--listen-client-urls',
  `http://127.0.0.1:${ports.etcdClient}`,
  '--advertise-client-urls',
  `http://127.0.0.1:${ports.etcdClient}`,
  '--listen-peer-urls',
  `http://127.0.0.1:${ports.etcdPeer}`,
  '--initial-advertise-peer-urls',
  `http://127.0.0.1:${ports.etcdPeer}`,
  '--initial-cluster',
  `e0=http://127.0.0.1:${ports.etcdPeer}`,
  '--initial-cluster-state',
  'new',
  '--logger',
  'zap',
  '--log-level',
  'warn',
];
