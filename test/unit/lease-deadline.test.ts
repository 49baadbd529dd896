import {
  isRetryableSqlState,
  leaseSafetyMarginMs,
  provenUntil,
  RETRY_MAX_DELAY_MS,
  retryDelayMs,
  statementTimeoutMs,
} from '../../src/features/job-scheduler/run/lease-deadline';
import { assessReplication } from '../../src/features/job-scheduler/operations/replication-check';

describe('the local deadline', () => {
  it('takes a tenth of the lease off, at most one second', () => {
    expect(leaseSafetyMarginMs(3)).toBe(0);
    expect(leaseSafetyMarginMs(2_000)).toBe(200);
    expect(leaseSafetyMarginMs(10_000)).toBe(1_000);
    expect(leaseSafetyMarginMs(15 * 60_000)).toBe(1_000);
  });

  it('runs from the send instant of the confirmed write, never from its answer', () => {
    expect(provenUntil(1_000, 20_000)).toBe(1_000 + 20_000 - 1_000);
    expect(provenUntil(0, 2_000)).toBe(1_800);
  });
});

describe('statement bounds', () => {
  it('never exceed the configured bound, the heartbeat interval, or the time left before the deadline', () => {
    expect(statementTimeoutMs(5_000)).toBe(5_000);
    expect(statementTimeoutMs(5_000, { heartbeatMs: 2_000 })).toBe(2_000);
    expect(statementTimeoutMs(5_000, { heartbeatMs: 2_000, deadline: 10_700, now: 10_000 })).toBe(700);
    expect(statementTimeoutMs(5_000, { heartbeatMs: 0 })).toBe(5_000);
    // A very short interval still gets MIN_HEARTBEAT_STATEMENT_MS.
    expect(statementTimeoutMs(5_000, { heartbeatMs: 25 })).toBe(250);
    expect(statementTimeoutMs(100, { heartbeatMs: 25 })).toBe(100);
  });

  it('are at least 1 ms, even past the deadline', () => {
    expect(statementTimeoutMs(5_000, { deadline: 100, now: 200 })).toBe(1);
  });
});

describe('retry backoff', () => {
  it('grows exponentially with jitter between half and all of its ceiling', () => {
    expect(retryDelayMs(1, 60_000, () => 0)).toBe(50);
    expect(retryDelayMs(1, 60_000, () => 0.999)).toBe(99);
    expect(retryDelayMs(3, 60_000, () => 0)).toBe(200);
    expect(retryDelayMs(50, 60_000, () => 0.999)).toBeLessThanOrEqual(RETRY_MAX_DELAY_MS);
    expect(retryDelayMs(50, 60_000, () => 0)).toBe(RETRY_MAX_DELAY_MS / 2);
  });

  it('never waits past the deadline', () => {
    expect(retryDelayMs(10, 30, () => 0.5)).toBe(30);
    expect(retryDelayMs(10, -5, () => 0.5)).toBe(0);
  });
});

describe('retryable failures', () => {
  it.each(['57P01', '57P02', '57P03', '08006', '08001', '08003', '53300', '53100', '57014', '55P03', '40001', '40P01', '25006'])('%s is retried', (sqlState) =>
    expect(isRetryableSqlState(sqlState)).toBe(true),
  );

  it('a failure without SQLSTATE (refused, reset, closed, timed out) is retried', () => {
    expect(isRetryableSqlState(undefined)).toBe(true);
  });

  it.each(['42P01', '42501', '22P02', '23505', '0A000', 'XX000'])('%s is not retried: it would fail again', (sqlState) => {
    expect(isRetryableSqlState(sqlState)).toBe(false);
  });
});

describe('replication assessment', () => {
  const row = (extra: Partial<{ standbys: number; synchronousStandbyNames: string; synchronousCommit: string }>) => ({
    inRecovery: false,
    standbys: 0,
    synchronousStandbyNames: '',
    synchronousCommit: 'on',
    ...extra,
  });

  it('is safe without streaming standbys (nothing to fail over to, or replication below PostgreSQL)', () => {
    expect(assessReplication(row({}))).toMatchObject({ safe: true, risk: null, standbys: 0 });
  });

  it('is safe with synchronous standbys and a commit that waits for them', () => {
    for (const synchronousCommit of ['on', 'remote_write', 'remote_apply']) {
      expect(assessReplication(row({ standbys: 2, synchronousStandbyNames: '"member-2"', synchronousCommit })).safe).toBe(true);
    }
  });

  it('names the risk of asynchronous standbys', () => {
    const status = assessReplication(row({ standbys: 2 }));
    expect(status.safe).toBe(false);
    expect(status.risk).toMatch(/2 standby\(s\) asynchronously .*synchronous_standby_names is empty/);
  });

  it('names the risk of a commit that does not wait', () => {
    for (const synchronousCommit of ['off', 'local']) {
      const status = assessReplication(row({ standbys: 1, synchronousStandbyNames: 'ANY 1 (a, b)', synchronousCommit }));
      expect(status.safe).toBe(false);
      expect(status.risk).toContain(`synchronous_commit is '${synchronousCommit}'`);
    }
  });
});
