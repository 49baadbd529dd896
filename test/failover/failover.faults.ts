import { sleep } from '../chaos/chaos.admin';
import { signalAll } from '../support/fleet';
import type { ClusterRoles, FailoverCluster, PatroniMember } from './failover.cluster';
import type { FailoverConfig, FaultKind } from './failover.config';
import { httpRequest } from './failover.http';
import { untilWritable } from './failover.probe';

export interface FaultRecord {
  kind: FaultKind;
  /** Wall clock of the fault: the kill, or the switchover request. */
  at: number;
  oldLeader: string;
  /** Where the first write after the fault landed. */
  newLeader?: string;
  /** From the fault to the first write through HAProxy that landed on the new leader. */
  failoverMs?: number;
  /** Probes that failed meanwhile, by class (phase, SQLSTATE or socket error). */
  probeFailures: Record<string, number>;
  /** Lagging crash: walsenders stopped, and for how long before the kill. */
  stalledWalsenders?: number;
  stallMs?: number;
  /** Crashes: processes killed. */
  killedProcesses?: number;
  /** Switchover: what Patroni's REST API answered. */
  switchover?: { candidate: string; status: number; body: string };
  /** The crashed member was started again (it rejoins as a replica). */
  restarted?: string;
  /** What went otherwise than planned: the run proves less than it claims. */
  problems: string[];
}

const FAILOVER_TIMEOUT_MS = 60_000;

/**
 * The three faults, against whichever member leads when each happens. A crashed member is
 * started again once the new leader takes writes, so that the cluster has three members again
 * before the next fault (the orchestrator waits for that).
 */
export class FailoverFaults {
  constructor(
    private readonly config: FailoverConfig,
    private readonly cluster: FailoverCluster,
    private readonly log: (line: string) => void,
  ) {}

  async run(kind: FaultKind): Promise<FaultRecord> {
    const roles = await this.cluster.roles();
    const leader = roles.leader;
    if (!leader) throw new Error(`${kind}: no single leader to fault (primaries: ${roles.primaries.map((member) => member.name).join(', ') || 'none'})`);
    switch (kind) {
      case 'crash':
        return this.crash(leader, kind, 0);
      case 'lagging-crash':
        return this.crash(leader, kind, this.config.lagStallMs);
      case 'switchover':
        return this.switchover(leader, roles);
    }
  }

  /**
   * SIGKILL of the leader's Patroni and of every process of its PostgreSQL at once. With a stall,
   * its walsenders are stopped (SIGSTOP) first while the nodes keep writing, so that the
   * replicas fall behind what the leader acknowledged; the kill takes them too.
   */
  private async crash(leader: PatroniMember, kind: FaultKind, stallMs: number): Promise<FaultRecord> {
    const problems: string[] = [];
    let stalledWalsenders: number | undefined;
    let stalledFor: number | undefined;
    if (stallMs > 0) {
      const walsenders = leader.walsenderPids();
      if (walsenders.length === 0) problems.push(`${kind}: the leader ${leader.name} had no walsender to stop`);
      const stalledAt = Date.now();
      signalAll(walsenders, 'SIGSTOP');
      stalledWalsenders = walsenders.length;
      this.log(`${kind}: walsenders of ${leader.name} stopped (${walsenders.length}); killing it in ${stallMs} ms`);
      await sleep(stallMs);
      stalledFor = Date.now() - stalledAt;
    }
    const at = Date.now();
    const killedProcesses = leader.crash();
    this.log(`${kind}: SIGKILL of ${leader.name} (Patroni and ${killedProcesses - 1} PostgreSQL processes)`);
    const writable = await untilWritable(this.cluster.proxyUrl(), { since: at, timeoutMs: FAILOVER_TIMEOUT_MS, notOnPort: leader.ports.postgres });
    if (!writable.ok) problems.push(`${kind}: no write through HAProxy within ${FAILOVER_TIMEOUT_MS} ms`);
    const newLeader = this.cluster.memberOnPort(writable.port)?.name;
    this.log(`${kind}: writes land on ${newLeader ?? 'nothing'} after ${(writable.ms / 1000).toFixed(1)} s; restarting ${leader.name}`);
    leader.start();
    return {
      kind,
      at,
      oldLeader: leader.name,
      ...(newLeader ? { newLeader, failoverMs: writable.ms } : {}),
      probeFailures: writable.failures,
      ...(stalledWalsenders === undefined ? {} : { stalledWalsenders, stallMs: stalledFor }),
      killedProcesses,
      restarted: leader.name,
      problems,
    };
  }

  /** Patroni's REST API: POST /switchover from the leader to a replica (the sync standby in sync mode). */
  private async switchover(leader: PatroniMember, roles: ClusterRoles): Promise<FaultRecord> {
    const problems: string[] = [];
    const candidates = this.cluster.mode === 'sync' ? roles.syncStandbys : roles.replicas;
    const candidate = candidates.find((member) => member !== leader);
    if (!candidate) throw new Error(`switchover: no candidate (replicas ${roles.replicas.map((member) => member.name).join(', ')})`);
    const at = Date.now();
    const [answer, writable] = await Promise.all([
      httpRequest(leader.ports.rest, '/switchover', { method: 'POST', json: { leader: leader.name, candidate: candidate.name }, timeoutMs: 60_000 }),
      untilWritable(this.cluster.proxyUrl(), { since: at, timeoutMs: FAILOVER_TIMEOUT_MS, notOnPort: leader.ports.postgres }),
    ]);
    this.log(`switchover ${leader.name} -> ${candidate.name}: Patroni answered ${answer.status} ${answer.body.trim()}`);
    if (answer.status !== 200) problems.push(`switchover: Patroni answered ${answer.status} ${answer.body.trim()}`);
    if (!writable.ok) problems.push(`switchover: no write on a new leader through HAProxy within ${FAILOVER_TIMEOUT_MS} ms`);
    const newLeader = this.cluster.memberOnPort(writable.port)?.name;
    this.log(`switchover: writes land on ${newLeader ?? 'nothing'} after ${(writable.ms / 1000).toFixed(1)} s`);
    return {
      kind: 'switchover',
      at,
      oldLeader: leader.name,
      ...(newLeader ? { newLeader, failoverMs: writable.ms } : {}),
      probeFailures: writable.failures,
      switchover: { candidate: candidate.name, status: answer.status, body: answer.body.trim().slice(0, 200) },
      problems,
    };
  }
}
