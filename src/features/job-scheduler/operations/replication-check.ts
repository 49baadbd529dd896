import type { ReplicationRow } from './operations.sql';

/** What the lease knows of the replication of the server it writes to. */
export interface JobLeaseReplicationStatus {
  /** Streaming (physical) standbys connected to the primary. */
  standbys: number;
  synchronousStandbyNames: string;
  synchronousCommit: string;
  /**
   * Whether what the primary acknowledges survives a failover to a standby: true with no
   * streaming standby (nothing to fail over to, or replication below PostgreSQL, as in managed
   * services), or with synchronous standbys named and synchronous_commit on, remote_write or
   * remote_apply.
   */
  safe: boolean;
  /** Why not, in one sentence; null when safe. */
  risk: string | null;
}

/** synchronous_commit values that do not wait for a standby. */
const LOCAL_COMMITS = new Set(['off', 'local']);

/** Judges one reading of the server's replication settings. Pure. */
export const assessReplication = (row: ReplicationRow): JobLeaseReplicationStatus => {
  const standbys = Number(row.standbys);
  const names = row.synchronousStandbyNames.trim();
  const commit = row.synchronousCommit.trim().toLowerCase();
  let risk: string | null = null;
  if (standbys > 0 && names === '') {
    risk = `the primary streams to ${standbys} standby(s) asynchronously (synchronous_standby_names is empty): a failover can forget acquisitions and completions it acknowledged, and hand the same run and fencing token out again`;
  } else if (standbys > 0 && LOCAL_COMMITS.has(commit)) {
    risk = `synchronous_commit is '${commit}' while the primary streams to ${standbys} standby(s): a failover can forget acquisitions and completions it acknowledged, and hand the same run and fencing token out again`;
  }
  return { standbys, synchronousStandbyNames: names, synchronousCommit: commit, safe: risk === null, risk };
};
