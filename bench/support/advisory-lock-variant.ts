import type { LeaseVariant } from './lease-node';
import { startRawPool } from './raw-variants';

const TRY_LOCK = 'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS "locked"';
const UNLOCK = 'SELECT pg_advisory_unlock(hashtextextended($1, 0)) AS "unlocked"';

/**
 * The peer: a session-level `pg_try_advisory_lock` keyed by a hash of `code:runKey`, the lock
 * many applications hand-roll. The winner keeps its connection checked out while it holds the
 * lock and unlocks to finish. It leaves no record: nothing marks the run as done, so a node that
 * tries after the unlock runs it again, and a crashed holder's work is not reclaimed but simply
 * forgotten. It is measured for its speed, not as an equivalent.
 */
export const ADVISORY_LOCK: LeaseVariant = {
  name: 'advisory-lock',
  description: 'peer: session pg_try_advisory_lock / pg_advisory_unlock on a held connection (no durable record)',
  start: async (context) => {
    const pool = startRawPool(context);
    return {
      acquire: async (code, runKey) => {
        const key = `${code}:${runKey}`;
        const client = await pool.connect();
        let locked = false;
        try {
          locked = (await client.query<{ locked: boolean }>(TRY_LOCK, [key])).rows[0]?.locked === true;
        } finally {
          if (!locked) client.release();
        }
        if (!locked) return undefined;
        return {
          complete: async () => {
            try {
              return (await client.query<{ unlocked: boolean }>(UNLOCK, [key])).rows[0]?.unlocked === true;
            } finally {
              client.release();
            }
          },
        };
      },
    };
  },
};
