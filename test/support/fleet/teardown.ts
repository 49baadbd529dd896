import { readdirSync, readlinkSync } from 'node:fs';
import { join, sep } from 'node:path';
import type { FleetMember } from './fleet-process';

/**
 * Teardown of a fleet. The rule everywhere: a process the run started does not outlive it, also
 * when the run fails, times out or is interrupted (the exit handler is synchronous).
 */

/** SIGKILLs every process still alive (stopped ones woken first). Synchronous: for exit handlers. */
export const killAll = (processes: Iterable<FleetMember>): void => {
  for (const member of processes) member.kill();
};

/** Runs `teardown` if this process exits before the returned function is called. */
export const onProcessExit = (teardown: () => void): (() => void) => {
  process.once('exit', teardown);
  return () => {
    process.removeListener('exit', teardown);
  };
};

/**
 * Waits up to `timeoutMs` for `processes` (already asked to stop) to exit by themselves; whoever
 * has not is SIGKILLed (after `beforeKill`, which marks it); returns once every one has exited.
 */
export const exitWithin = async <P extends FleetMember>(processes: readonly P[], timeoutMs: number, beforeKill?: (member: P) => void): Promise<void> => {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all(processes.map((member) => member.exited)),
    new Promise((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    }),
  ]);
  clearTimeout(timer);
  for (const member of processes) {
    if (!member.alive) continue;
    beforeKill?.(member);
    member.kill();
  }
  await Promise.all(processes.map((member) => member.exited));
};

/** SIGKILLs a whole process group (the leader and everything it started), stopped members included. */
export const killGroup = (pid: number | undefined): void => {
  if (!pid) return;
  for (const signal of ['SIGCONT', 'SIGKILL'] as const) {
    try {
      process.kill(-pid, signal);
    } catch {
      // the group is gone
    }
  }
};

/*
 * Processes that leave their group (PostgreSQL under Patroni starts the postmaster in a session of
 * its own, and every backend in another) are found by working directory instead: a run starts
 * each of them in its run directory, so whatever still works below it is the run's.
 */

const isInside = (path: string, directory: string): boolean => path === directory || path.startsWith(directory.endsWith(sep) ? directory : directory + sep);

/** Pids (not this process) whose working directory is `directory` or below it. Synchronous. */
export const processesUnder = (directory: string): number[] => {
  const pids: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return pids;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      if (isInside(readlinkSync(join('/proc', entry, 'cwd')), directory)) pids.push(pid);
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  return pids;
};

/** Sends `signal` to every pid; gone ones are skipped. Synchronous, for exit handlers too. */
export const signalAll = (pids: Iterable<number>, signal: NodeJS.Signals): void => {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // gone
    }
  }
};

/**
 * SIGKILLs whatever still works under `directory` (stopped processes are woken first so that
 * nothing lingers), until nothing is left or `attempts` sweeps have passed. Synchronous.
 */
export const killEverythingUnder = (directory: string, attempts = 20): number[] => {
  const killed = new Set<number>();
  for (let sweep = 0; sweep < attempts; sweep++) {
    const pids = processesUnder(directory);
    if (pids.length === 0) break;
    for (const pid of pids) killed.add(pid);
    signalAll(pids, 'SIGKILL');
    signalAll(pids, 'SIGCONT');
    // A short pause for the kernel to reap them (synchronous: usable in an exit handler).
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
  }
  return [...killed];
};
