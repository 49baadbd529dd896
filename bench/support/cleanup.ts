/**
 * Everything a benchmark starts (servers, databases, pools, Nest applications) is registered here
 * and closed in reverse order, also when a scenario throws, so the process exits by itself.
 */
export class CleanupStack {
  private readonly closers: Array<() => Promise<void>> = [];

  /** Registers `close` and returns `resource`, for `const pool = cleanup.add(new Pool(), () => pool.end())`. */
  add<T>(resource: T, close: (resource: T) => Promise<void>): T {
    this.closers.push(() => close(resource));
    return resource;
  }

  /** Closes everything registered, newest first; a failing closer does not stop the others. */
  async close(): Promise<void> {
    const failures: unknown[] = [];
    while (this.closers.length > 0) {
      const close = this.closers.pop();
      try {
        await close?.();
      } catch (error) {
        failures.push(error);
      }
    }
    if (failures.length > 0) throw new AggregateError(failures, `${failures.length} cleanup step(s) failed`);
  }
}

/** Runs `body` with a fresh stack and closes it afterwards, whatever happens. */
export const withCleanup = async <T>(body: (cleanup: CleanupStack) => Promise<T>): Promise<T> => {
  const cleanup = new CleanupStack();
  try {
    return await body(cleanup);
  } finally {
    await cleanup.close();
  }
};
