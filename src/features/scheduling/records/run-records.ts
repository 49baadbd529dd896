import { describeFailure } from '../../job-scheduler/lease-arguments';
import { DEFAULT_FAILURE_LOG_INTERVAL_MS, FailureLog, type LogLine } from './failure-log';
import { MAX_MISSED_RECORDS } from '../schedule/due-instants';
import type { SchedulerLogger, SchedulerMetrics, SchedulerTimers } from '../scheduler-ports';
import { schedulingErrors } from '../scheduling.errors';
import type { JobRunListener, JobRunRecord } from '../scheduling.types';

export interface RunRecordsOptions {
  timers: Pick<SchedulerTimers, 'now'>;
  logger: SchedulerLogger;
  metrics?: SchedulerMetrics;
  /** How many recent records `recent` keeps. Default 1,000. */
  historySize?: number;
  /** A job failing with the same error is summarized at most this often. Default 60 s. */
  failureLogIntervalMs?: number;
}

/**
 * Where a scheduler's outcomes go: the recent ones kept in memory, metrics, the log (a repeating
 * failure summarized, see FailureLog) and the listeners.
 */
export class RunRecords {
  readonly recent: JobRunRecord[] = [];
  private readonly listeners = new Set<JobRunListener>();
  private readonly failureLog: FailureLog;

  constructor(private readonly options: RunRecordsOptions) {
    const interval = options.failureLogIntervalMs ?? DEFAULT_FAILURE_LOG_INTERVAL_MS;
    if (!Number.isSafeInteger(interval) || interval < 0)
      throw schedulingErrors.invalidOption('failureLogIntervalMs', 'a whole number of ms, 0 or more', interval);
    this.failureLog = new FailureLog(interval, () => options.timers.now());
  }

  onRun(listener: JobRunListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Records an outcome (and logs it, unless `log` is false); returns it. */
  emit(record: JobRunRecord, log = true): JobRunRecord {
    this.recent.push(record);
    if (this.recent.length > (this.options.historySize ?? 1_000)) this.recent.shift();
    this.options.metrics?.record(record);
    if (log) this.log(record);
    for (const listener of this.listeners) {
      try {
        listener(record);
      } catch (error) {
        this.options.logger.error(`A job run listener threw: ${String(error)}`);
      }
    }
    return record;
  }

  /** Missed occurrences of a job: the latest MAX_MISSED_RECORDS one by one, the rest counted, one log line. */
  missed(job: Pick<JobRunRecord, 'name' | 'scheduleId'>, instants: number[], total: number): void {
    if (total <= 0) return;
    const listed = instants.slice(-MAX_MISSED_RECORDS);
    for (const instant of listed) this.emit({ ...job, outcome: 'missed', scheduledAt: new Date(instant), trigger: 'schedule' }, false);
    const unlisted = total - listed.length;
    if (unlisted > 0 && listed[0] !== undefined) {
      this.options.metrics?.record({ ...job, outcome: 'missed', scheduledAt: new Date(listed[0]), trigger: 'schedule' }, unlisted);
    }
    const span = listed.length === 0 ? '' : ` (listed: ${new Date(listed[0]).toISOString()} to ${new Date(listed[listed.length - 1]).toISOString()})`;
    const subject = job.scheduleId === undefined ? job.name : `${job.name} (schedule ${job.scheduleId})`;
    this.options.logger.warn(`${subject}: ${total} occurrence(s) missed${span}`);
  }

  private log(record: JobRunRecord): void {
    const { logger } = this.options;
    const what = `${record.name}${record.scheduleId === undefined ? '' : ` (schedule ${record.scheduleId})`} @ ${record.scheduledAt.toISOString()}${record.tenantId === undefined ? '' : ` tenant ${record.tenantId}`}${record.trigger === 'take-over' ? ' (take-over)' : ''}`;
    if (record.outcome === 'abandoned') {
      logger.warn(`${what} abandoned (${record.errorCode}): ${record.error instanceof Error ? record.error.message : ''}`);
    } else if (record.outcome === 'failed') {
      const { error } = describeFailure(record.error);
      const line = `${what} failed (${record.errorCode}): ${error.name}: ${error.message}`;
      if (record.errorCode === 'JOB_SHUTDOWN') logger.warn(line);
      else {
        const signature = `${record.errorCode} ${error.name}: ${error.message}`;
        const stack = record.error instanceof Error ? record.error.stack : undefined;
        this.write(this.failureLog.failed(record.name, signature, line, stack));
      }
    } else if (record.outcome === 'succeeded') {
      // A steady fleet logs nothing per successful run at the default level.
      logger.debug?.(`${what} succeeded in ${record.durationMs} ms`);
      this.write(this.failureLog.succeeded(record.name));
    } else {
      logger.debug?.(`${what} ${record.outcome}`);
    }
  }

  private write(lines: LogLine[]): void {
    for (const line of lines) {
      if (line.level === 'error') this.options.logger.error(line.message, line.stack);
      else this.options.logger.log(line.message);
    }
  }
}
