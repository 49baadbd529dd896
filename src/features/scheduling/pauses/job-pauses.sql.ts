import type { SqlStatement } from '../../job-scheduler/job-scheduler.sql';

/** A paused job as the pause table holds it. */
export interface JobPauseRow {
  code: string;
  pausedBy: string;
  pausedAt: Date;
}

export interface JobPauseStatements {
  /** Every paused job: the poll, one statement for all jobs (the table holds a handful of rows). */
  list(): SqlStatement;
  /** Pauses one job (again: keeps the first pause's author and instant). */
  pause(code: string, pausedBy: string): SqlStatement;
  /** Resumes one job; returns its row when it was paused. */
  resume(code: string): SqlStatement;
}

/** The statements of the pause table (migration AddJobPauseTable1764547200008), `table` quoted. */
export const createJobPauseStatements = (table: string): JobPauseStatements => {
  const listText = `SELECT "code", "pausedBy", "pausedAt" FROM ${table} ORDER BY "code"`;
  const pauseText = `
INSERT INTO ${table} ("code", "pausedBy", "pausedAt") VALUES ($1, $2, CURRENT_TIMESTAMP)
ON CONFLICT ("code") DO NOTHING
RETURNING "code"`.trim();
  const resumeText = `DELETE FROM ${table} WHERE "code" = $1 RETURNING "code"`;
  return {
    list: () => ({ text: listText, values: [], operation: 'pause' }),
    pause: (code, pausedBy) => ({ text: pauseText, values: [code, pausedBy], operation: 'pause' }),
    resume: (code) => ({ text: resumeText, values: [code], operation: 'pause' }),
  };
};
