import type { Config } from 'jest';

const tsJest: Config['transform'] = {
  '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
};

const config: Config = {
  reporters: ['default', '<rootDir>/test/support/summary-reporter.cjs'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  // A global option: jest ignores it inside a project, where it used to stand.
  testTimeout: 60_000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform: tsJest,
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
    },
    {
      displayName: 'integration',
      testEnvironment: 'node',
      transform: tsJest,
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
    },
    {
      // `npm run test:proofs`: the fault and failover proofs, packaging and schematics (minutes each).
      displayName: 'proofs',
      testEnvironment: 'node',
      transform: tsJest,
      testMatch: ['<rootDir>/test/proofs/**/*.test.ts'],
    },
  ],
};

export default config;
