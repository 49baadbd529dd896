// Import rules of src/, checked by `npm run depcheck` (part of `npm test`): no import circles
// (type-only imports count), and dependencies point down: the lease (job-scheduler/) knows
// nothing of the scheduler, the dashboard, health or the integrations; the scheduler knows
// nothing of the dashboard or health, which sit above both; inside the lease, run/ sits below the
// service and telemetry/ below everything.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle: move the shared part (a type, a constant) to a lower file that both import.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'lease-below-everything',
      severity: 'error',
      comment: 'The lease (src/features/job-scheduler) must not import the scheduler, the dashboard, health or the integrations: they are built on it.',
      from: { path: '^src/features/job-scheduler/' },
      to: { path: '^src/features/(scheduling|dashboard|health|integrations)/' },
    },
    {
      name: 'scheduler-below-dashboard-and-health',
      severity: 'error',
      comment: 'The scheduler (src/features/scheduling) must not import the dashboard or health: they sit above it.',
      from: { path: '^src/features/scheduling/' },
      to: { path: '^src/features/(dashboard|health)/' },
    },
    {
      name: 'run-below-the-service',
      severity: 'error',
      comment:
        "The lease's run machinery (job-scheduler/run) gets the lease's operations through a port: it imports neither the service, the module nor operations/.",
      from: { path: '^src/features/job-scheduler/run/' },
      to: { path: '^src/features/job-scheduler/(job-scheduler\\.(service|module|module-definition|standalone)\\.ts$|operations/)' },
    },
    {
      name: 'telemetry-is-a-leaf',
      severity: 'error',
      comment: 'Lease telemetry (job-scheduler/telemetry) imports nothing else from src/: every layer may use it.',
      from: { path: '^src/features/job-scheduler/telemetry/' },
      to: { path: '^src/', pathNot: '^src/features/job-scheduler/telemetry/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    moduleSystems: ['es6', 'cjs'],
  },
};
