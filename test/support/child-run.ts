import { type ChildProcess, spawn } from 'node:child_process';

export interface ChildRun {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** stdout and stderr, interleaved as they came. */
  output: string;
}

/**
 * Runs a command in a process group of its own and collects its output. `kill()` ends the whole
 * group (the command and every process it started), also when the test fails or times out.
 */
export class GroupedChild {
  private child: ChildProcess | undefined;

  run(command: string, args: string[], options: { cwd: string; timeoutMs: number; env?: NodeJS.ProcessEnv }): Promise<ChildRun> {
    return new Promise((resolve, reject) => {
      const child = spawn(command, args, {
        cwd: options.cwd,
        env: options.env ?? process.env,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      this.child = child;
      let output = '';
      child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      const timer = setTimeout(() => {
        this.kill();
        reject(new Error(`${command} ${args.join(' ')} did not finish within ${options.timeoutMs} ms:\n${output}`));
      }, options.timeoutMs);
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.once('close', (exitCode, signal) => {
        clearTimeout(timer);
        resolve({ exitCode, signal, output });
      });
    });
  }

  /** SIGKILLs the process group, stopped members included. */
  kill(): void {
    const pid = this.child?.pid;
    if (!pid) return;
    for (const signal of ['SIGCONT', 'SIGKILL'] as const) {
      try {
        process.kill(-pid, signal);
      } catch {
        // the group is gone
      }
    }
  }
}
