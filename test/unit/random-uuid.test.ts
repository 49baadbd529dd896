import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { UUID } from '../../src/features/job-scheduler/lease-arguments';
import { randomUuid } from '../../src/features/job-scheduler/random-uuid';

const VERSION_4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('randomUuid: the owner tokens and correlation ids the scheduler draws', () => {
  it('draws version 4 UUIDs the lease accepts, all different, across many refills of its random bytes', () => {
    const drawn = Array.from({ length: 100_000 }, () => randomUuid());
    expect(drawn.filter((uuid) => !VERSION_4.test(uuid) || !UUID.test(uuid))).toEqual([]);
    expect(new Set(drawn).size).toBe(drawn.length);
  });

  it('spreads every hex digit evenly over the positions that are random', () => {
    const counts = new Map<string, number>();
    let digits = 0;
    for (let draw = 0; draw < 20_000; draw++) {
      const hex = randomUuid().replaceAll('-', '');
      // Position 12 is the version; position 16 holds the variant's two bits.
      for (let position = 0; position < 32; position++) {
        if (position === 12 || position === 16) continue;
        counts.set(hex[position], (counts.get(hex[position]) ?? 0) + 1);
        digits++;
      }
    }
    expect([...counts.keys()].sort().join('')).toBe('0123456789abcdef');
    // 600,000 digits: 37,500 expected of each, a standard deviation of about 190.
    for (const count of counts.values()) expect(Math.abs(count - digits / 16)).toBeLessThan(2_000);
  });

  it('keeps each UUID as one flat string: under 100 bytes of heap per UUID kept (crypto.randomUUID on Node 20: about 490)', () => {
    const modulePath = join(__dirname, '../../src/features/job-scheduler/random-uuid');
    const script = `
      const { randomUuid } = require(${JSON.stringify(modulePath)});
      const count = 100000;
      global.gc();
      const before = process.memoryUsage().heapUsed;
      const kept = new Array(count);
      for (let index = 0; index < count; index++) kept[index] = randomUuid();
      global.gc();
      const bytesPerUuid = (process.memoryUsage().heapUsed - before) / count;
      // Read after the collection, so that the UUIDs are alive through it.
      process.stdout.write(bytesPerUuid + ' ' + kept.length);
    `;
    const [bytesPerUuid, kept] = execFileSync(process.execPath, ['--expose-gc', '-r', 'ts-node/register/transpile-only', '-e', script], {
      env: { ...process.env, TS_NODE_PROJECT: join(__dirname, '../../tsconfig.json') },
      encoding: 'utf8',
    })
      .split(' ')
      .map(Number);
    expect(kept).toBe(100_000);
    // 56 bytes for a flat one-byte string of 36 characters, 8 for its slot in the array.
    expect(bytesPerUuid).toBeGreaterThan(50);
    expect(bytesPerUuid).toBeLessThan(100);
  });
});
