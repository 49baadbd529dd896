import type { FleetMessage } from './fleet-process';

/**
 * The typed protocol between an orchestrator and the processes of its fleet: the child's settings
 * travel as JSON in one environment variable, messages over the IPC channel of `fork`. One value
 * per suite, declared beside its message types and used by both sides.
 */
export interface FleetProtocol<Settings, ToChild extends FleetMessage, FromChild extends FleetMessage> {
  /** The environment variable that carries a child's settings. */
  readonly variable: string;
  /** Orchestrator side: the environment entry that gives a child its settings. */
  environment(settings: Settings): Record<string, string>;
  /** Child side: its settings; throws `startedBy` when the process was not started by its orchestrator. */
  settings(startedBy: string): Settings;
  /** Child side: the channel to the orchestrator. */
  parent(): ParentChannel<ToChild, FromChild>;
}

/** A child's end of the IPC channel. */
export interface ParentChannel<ToChild extends FleetMessage, FromChild extends FleetMessage> {
  /** Sends while the orchestrator listens; a message sent after it left is dropped. */
  send(message: FromChild): void;
  /** Sends and resolves once the message is handed over (at once without a channel): last words before exit. */
  sendAndFlush(message: FromChild): Promise<void>;
  onMessage(handler: (message: ToChild) => void): void;
  /** The orchestrator is gone: leave at once (exit 0) rather than linger, unless `unless()` says this process is already on its way out. */
  exitWhenOrphaned(unless?: () => boolean): void;
}

const parentChannel = <ToChild extends FleetMessage, FromChild extends FleetMessage>(): ParentChannel<ToChild, FromChild> => ({
  send: (message) => {
    if (process.connected) process.send?.(message, undefined, {}, () => undefined);
  },
  sendAndFlush: (message) =>
    new Promise<void>((resolve) => {
      if (!process.connected || !process.send) resolve();
      else process.send(message, undefined, {}, () => resolve());
    }),
  onMessage: (handler) => {
    process.on('message', handler);
  },
  exitWhenOrphaned: (unless) => {
    process.on('disconnect', () => {
      if (!unless?.()) process.exit(0);
    });
  },
});

export const fleetProtocol = <Settings, ToChild extends FleetMessage, FromChild extends FleetMessage>(
  variable: string,
): FleetProtocol<Settings, ToChild, FromChild> => ({
  variable,
  environment: (settings) => ({ [variable]: JSON.stringify(settings) }),
  settings: (startedBy) => {
    const settings = JSON.parse(process.env[variable] ?? 'null') as Settings | null;
    if (!settings) throw new Error(startedBy);
    return settings;
  },
  parent: () => parentChannel<ToChild, FromChild>(),
});
