import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sleep } from '../chaos/chaos.admin';
import { killEverythingUnder, processesUnder, signalAll } from '../support/fleet';
import type { FailoverMode } from './failover.config';
import { type ClusterPorts, etcdArguments, haproxyConfig, type MemberPorts, patroniConfig, SUPERUSER } from './failover.cluster-config';
import { httpStatus } from './failover.http';
import { probeWrite } from './failover.probe';
import { type ClusterProcess, clusterEnvironment, commandLineOf, type RunAs, spawnClusterProcess } from './failover.processes';
import type { FailoverTools } from './failover.tools';

/** One Patroni member: its Patroni process, and the PostgreSQL working in its data directory. */
export class PatroniMember {
  patroni: ClusterProcess | undefined;
  starts = 0;

  constructor(
    readonly ports: MemberPorts,
    readonly dir: string,
    readonly dataDir: string,
    private readonly launch: (member: PatroniMember) => ClusterProcess,
  ) {}

  get name(): string {
    return this.ports.name;
  }

  start(): void {
    this.starts++;
    this.patroni = this.launch(this);
  }

  status(path: string): Promise<number> {
    return httpStatus(this.ports.rest, path);
  }

  /** The PostgreSQL processes of this member (postmaster, backends, walsenders...). */
  postgresPids(): number[] {
    return processesUnder(this.dataDir);
  }

  walsenderPids(): number[] {
    return this.postgresPids().filter((pid) => commandLineOf(pid).includes('walsender'));
  }

  /** A machine crash: SIGKILL to Patroni and every PostgreSQL process of the member at once. */
  crash(): number {
    const pids = [...(this.patroni?.alive && this.patroni.pid ? [this.patroni.pid] : []), ...this.postgresPids()];
    signalAll(pids, 'SIGKILL');
    // Stopped processes die of SIGKILL too; what is left (a fork in flight) goes in the sweep.
    killEverythingUnder(this.dataDir, 5);
    return pids.length;
  }

  /** Patroni's own shutdown (it stops PostgreSQL), then whatever is left is killed. */
  async stop(graceMs: number): Promise<void> {
    await this.patroni?.stop(graceMs);
    killEverythingUnder(this.dir);
  }
}

export interface ClusterRoles {
  leader: PatroniMember | undefined;
  /** Members answering 200 on /primary (more than one: split brain, as HAProxy sees it). */
  primaries: PatroniMember[];
  replicas: PatroniMember[];
  syncStandbys: PatroniMember[];
}

/**
 * The cluster under test: one etcd, three Patroni members (PostgreSQL 15), one HAProxy. Every
 * process works inside `runDir`, so `killAll` finds them all even when a PostgreSQL was started
 * by a Patroni that is gone.
 */
export class FailoverCluster {
  readonly members: PatroniMember[];
  private etcd: ClusterProcess | undefined;
  private haproxy: ClusterProcess | undefined;

  constructor(
    readonly mode: FailoverMode,
    private readonly tools: FailoverTools,
    readonly runDir: string,
    readonly ports: ClusterPorts,
    private readonly runAs: RunAs | undefined,
    private readonly log: (line: string) => void,
  ) {
    this.members = ports.members.map((member) => {
      const dir = join(runDir, member.name);
      return new PatroniMember(member, dir, join(dir, 'data'), (self) => this.launchPatroni(self));
    });
  }

  /** A URL through HAProxy: wherever the leader is. */
  proxyUrl(database = 'postgres'): string {
    return `postgres://${SUPERUSER.username}:${SUPERUSER.password}@127.0.0.1:${this.ports.proxy}/${database}`;
  }

  memberOnPort(port: number | undefined): PatroniMember | undefined {
    return this.members.find((member) => member.ports.postgres === port);
  }

  async start(timeoutMs: number): Promise<void> {
    const began = Date.now();
    const etcdDir = join(this.runDir, 'etcd');
    await mkdir(etcdDir, { recursive: true });
    this.chownRunDir();
    this.etcd = spawnClusterProcess('etcd', this.tools.etcd, etcdArguments(this.ports, join(etcdDir, 'data')), {
      cwd: etcdDir,
      logFile: join(this.runDir, 'etcd.log'),
      env: clusterEnvironment(etcdDir),
      runAs: this.runAs,
    });
    await this.until(async () => (await httpStatus(this.ports.etcdClient, '/health')) === 200, 20_000, 'etcd answering /health', this.etcd);

    for (const member of this.members) {
      await mkdir(member.dir, { recursive: true, mode: 0o700 });
      await writeFile(
        join(member.dir, 'patroni.yml'),
        patroniConfig({
          mode: this.mode,
          scope: `sdcorejs-${this.mode}`,
          member: member.ports,
          etcdClientPort: this.ports.etcdClient,
          memberDir: member.dir,
          dataDir: member.dataDir,
          binDir: this.tools.postgresBinDir,
        }),
      );
    }
    this.chownRunDir();
    for (const member of this.members) member.start();

    const proxyDir = join(this.runDir, 'haproxy');
    await mkdir(proxyDir, { recursive: true });
    await writeFile(join(proxyDir, 'haproxy.cfg'), haproxyConfig(this.ports));
    this.chownRunDir();
    this.haproxy = spawnClusterProcess('haproxy', this.tools.haproxy, ['-db', '-f', join(proxyDir, 'haproxy.cfg')], {
      cwd: proxyDir,
      logFile: join(this.runDir, 'haproxy.log'),
      env: clusterEnvironment(proxyDir),
      runAs: this.runAs,
    });
    const waited = await this.waitHealthy(Math.max(1_000, timeoutMs - (Date.now() - began)));
    this.log(`cluster formed in ${((Date.now() - began) / 1000).toFixed(1)} s (healthy after ${(waited / 1000).toFixed(1)} s of waiting)`);
  }

  /** Who is what, from each member's REST API (the same endpoints HAProxy checks). */
  async roles(): Promise<ClusterRoles> {
    const states = await Promise.all(
      this.members.map(async (member) => {
        if (!member.patroni?.alive) return { member, primary: false, replica: false, sync: false };
        const [primary, replica, sync] = await Promise.all([member.status('/primary'), member.status('/replica'), member.status('/sync')]);
        return { member, primary: primary === 200, replica: replica === 200, sync: sync === 200 };
      }),
    );
    const primaries = states.filter((state) => state.primary).map((state) => state.member);
    return {
      leader: primaries.length === 1 ? primaries[0] : undefined,
      primaries,
      replicas: states.filter((state) => state.replica).map((state) => state.member),
      syncStandbys: states.filter((state) => state.sync).map((state) => state.member),
    };
  }

  /**
   * Waits until one leader answers /primary, every other member /replica (and, in sync mode,
   * one of them /sync) and streams from it, and a write through HAProxy lands on the leader.
   * Returns the wait.
   */
  async waitHealthy(timeoutMs: number): Promise<number> {
    const began = Date.now();
    let last = '';
    await this.until(
      async () => {
        const roles = await this.roles();
        last = `primaries [${roles.primaries.map((m) => m.name).join(',')}], replicas [${roles.replicas.map((m) => m.name).join(',')}], sync [${roles.syncStandbys.map((m) => m.name).join(',')}]`;
        if (!roles.leader || roles.replicas.length !== this.members.length - 1) return false;
        if (this.mode === 'sync' && roles.syncStandbys.length === 0) return false;
        // Every replica streams from the leader (a lagging crash has walsenders to stop).
        const walsenders = roles.leader.walsenderPids().length;
        last += `, ${walsenders} walsender(s) on ${roles.leader.name}`;
        if (walsenders < this.members.length - 1) return false;
        const write = await probeWrite(this.proxyUrl());
        last += write.ok ? `, write on ${write.port}` : `, write failed (${write.failure})`;
        return write.ok && write.port === roles.leader.ports.postgres;
      },
      timeoutMs,
      () => `a healthy cluster (${last})`,
    );
    return Date.now() - began;
  }

  /** Synchronous last resort (exit handlers): no process of the cluster survives this. */
  killAll(): void {
    for (const service of [this.haproxy, this.etcd, ...this.members.map((member) => member.patroni)]) service?.signal('SIGKILL');
    killEverythingUnder(this.runDir);
  }

  /** Orderly teardown: HAProxy, the members (Patroni stops PostgreSQL), etcd; then a sweep. */
  async destroy(): Promise<void> {
    await this.haproxy?.stop(3_000);
    await Promise.all(this.members.map((member) => member.stop(15_000)));
    await this.etcd?.stop(5_000);
    this.killAll();
  }

  logTails(): string {
    return [this.etcd, this.haproxy, ...this.members.map((member) => member.patroni)]
      .filter((service): service is ClusterProcess => service !== undefined)
      .map((service) => `--- ${service.name} (${service.logFile})\n${service.outputTail(1_500)}`)
      .join('\n');
  }

  private launchPatroni(member: PatroniMember): ClusterProcess {
    return spawnClusterProcess(`patroni ${member.name}`, this.tools.patroni, [join(member.dir, 'patroni.yml')], {
      cwd: member.dir,
      logFile: join(this.runDir, `patroni-${member.name}.log`),
      env: clusterEnvironment(member.dir),
      runAs: this.runAs,
    });
  }

  private chownRunDir(): void {
    if (!this.runAs) return;
    execFileSync('chown', ['-R', `${this.runAs.uid}:${this.runAs.gid}`, this.runDir]);
  }

  private async until(condition: () => Promise<boolean>, timeoutMs: number, what: string | (() => string), watched?: ClusterProcess): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (watched && !watched.alive) throw new Error(`${watched.name} exited while waiting:\n${watched.outputTail(3_000)}`);
      if (await condition()) return;
      if (Date.now() > deadline) {
        throw new Error(`no ${typeof what === 'string' ? what : what()} within ${timeoutMs} ms\n${this.logTails()}`);
      }
      await sleep(250);
    }
  }
}
