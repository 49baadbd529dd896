/** What a demo node tells the orchestrator (over the child-process IPC channel). */
export type DemoMessage =
  | { type: 'ready'; node: string }
  | { type: 'started'; node: string; tick: string }
  | { type: 'outcome'; node: string; tick: string; outcome: string; fencingToken?: number }
  | { type: 'reclaimed'; node: string; tick: string; fencingToken: number };
