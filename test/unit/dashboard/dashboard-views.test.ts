import { handlerStartOf } from '../../../src/features/dashboard/dashboard-views';

describe("a run's handler start (finishedAt - data.handlerMs)", () => {
  const finishedAt = new Date('2026-12-02T14:00:01.504Z');

  it('is the finish minus the run time the scheduler recorded, beside an error or alone', () => {
    expect(handlerStartOf({ finishedAt, data: { handlerMs: 1504 } })).toBe('2026-12-02T14:00:00.000Z');
    expect(handlerStartOf({ finishedAt, data: { error: { name: 'Error', message: 'boom' }, handlerMs: 4 } })).toBe('2026-12-02T14:00:01.500Z');
    expect(handlerStartOf({ finishedAt, data: { handlerMs: 0 } })).toBe(finishedAt.toISOString());
  });

  it('is unknown (null) while the run goes on, and for data without a usable handlerMs', () => {
    expect(handlerStartOf({ finishedAt: null, data: { handlerMs: 10 } })).toBeNull();
    for (const data of [null, 'text', [1504], {}, { handlerMs: '1504' }, { handlerMs: -1 }, { handlerMs: Number.NaN }, { released: true }]) {
      expect(handlerStartOf({ finishedAt, data })).toBeNull();
    }
  });
});
