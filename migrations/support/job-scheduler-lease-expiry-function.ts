// Helpers of migrations 1764547200010 and 1764547200011, apart from them: TypeORM loads every
// exported function of a file its migrations glob matches as a migration.

import { quoteIdentifier, quoteLiteral } from './job-scheduler-table-names';

/** The lease's expiry as migration 0009 indexed it: ("modifiedAt" as UTC) + "leaseMs" ms (a row without a lease: its "modifiedAt"). */
export const leaseExpiryOf = (row: string, column = 'modifiedAt'): string =>
  `(${row}"${column}" AT TIME ZONE 'UTC') + COALESCE(${row}"leaseMs", 0) * INTERVAL '1 millisecond'`;

/**
 * A RUNNING row's entry: its lease's expiry as of its start while it is in the first half of the
 * lease it started with (heartbeats there leave the entry as it is), else its lease's expiry now
 * (past half a lease, after a hand-over moved "modifiedAt" before its start, or on a row of 1.x
 * without "startedAt"). Never later than the row's expiry ("startedAt" <= "modifiedAt" in the first
 * case), so a scan of the entries past finds every lease that ran out. A heartbeat past the first
 * half of the lease changes it; the triggers move the entry whenever it changes.
 */
export const leaseExpiryEntryOf = (row: string): string => `CASE WHEN ${row}"startedAt" IS NULL OR ${row}"modifiedAt" < ${row}"startedAt"
      OR ${row}"startedAt" + COALESCE(${row}"leaseMs", 0) * INTERVAL '0.5 millisecond' <= ${row}"modifiedAt"
    THEN ${leaseExpiryOf(row)} ELSE ${leaseExpiryOf(row, 'startedAt')} END`;

/** A name in the job-scheduler table's schema, quoted: the function runs with a search_path of its own. */
export const inSchema = (schema: string, name: string): string => `${quoteIdentifier(schema)}.${quoteIdentifier(name)}`;

/**
 * How the function inserts an entry. `'skip-existing'` (0010): `ON CONFLICT DO NOTHING`, a
 * speculative insertion (two WAL records, the second confirming the first). `'plain'` (0011): an
 * INSERT, one record. The function deletes a row's old entry before it inserts the new one, and
 * a row's id is its own, so the conflict 0010 guarded against does not arise while the triggers
 * fire (see 1764547200011).
 */
export type LeaseExpiryInsert = 'skip-existing' | 'plain';

/**
 * The triggers' function (0010): keeps `"job-scheduler_lease_expiry"` for the job-scheduler table
 * of `schema`. SECURITY DEFINER with a fixed search_path; refuses any other table.
 */
export const keepLeaseExpiryFunction = (schema: string, insert: LeaseExpiryInsert): string => {
  const expiries = inSchema(schema, 'job-scheduler_lease_expiry');
  return `
CREATE OR REPLACE FUNCTION ${inSchema(schema, 'job-scheduler_keep_lease_expiry')}() RETURNS trigger
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $function$
BEGIN
  IF TG_TABLE_SCHEMA <> ${quoteLiteral(schema)} OR TG_TABLE_NAME <> 'job-scheduler' THEN
    RAISE EXCEPTION 'job-scheduler_keep_lease_expiry keeps the lease expiries of ${inSchema(schema, 'job-scheduler').replace(/'/g, "''")} only';
  END IF;
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM ${expiries};
    RETURN NULL;
  END IF;
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    DELETE FROM ${expiries} WHERE "expiresAt" = ${leaseExpiryEntryOf('OLD.')} AND "leaseId" = OLD."id";
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') AND NEW."status" = 'RUNNING' THEN
    INSERT INTO ${expiries} ("leaseId", "expiresAt") VALUES (NEW."id", ${leaseExpiryEntryOf('NEW.')})${insert === 'skip-existing' ? ' ON CONFLICT DO NOTHING' : ''};
  END IF;
  RETURN NULL;
END
$function$`;
};
