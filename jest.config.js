// One jest run, three projects: unit specs beside the code, per-app integration tests and
// cross-service end-to-end tests. Integration and e2e share one global setup that provisions an
// isolated database, subject prefix and (for e2e) the running services.
const fs = require('node:fs');
const path = require('node:path');

const swcrc = JSON.parse(fs.readFileSync(path.join(__dirname, '.swcrc'), 'utf8'));
delete swcrc.exclude;
const transform = { '^.+\\.ts$': ['@swc/jest', { ...swcrc, swcrc: false }] };
const moduleNameMapper = {
  '^@toolplane/([a-z-]+)$': '<rootDir>/libs/$1/src/index.ts',
  // The event signature check alone (no Nest): what @toolplane/client and the CLI load of libs/messaging.
  '^@toolplane/messaging/event-signature$': '<rootDir>/libs/messaging/src/event-signature.ts',
};
const common = { transform, moduleNameMapper, testEnvironment: 'node', rootDir: __dirname };

module.exports = {
  maxWorkers: 2,
  testTimeout: 60_000,
  reporters: ['default', '<rootDir>/tools/test/summary-reporter.js'],
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/{apps,libs,tools}/**/*.spec.ts'] },
    {
      ...common,
      displayName: 'integration',
      testMatch: [
        '<rootDir>/apps/*/test/**/*.test.ts',
        '<rootDir>/libs/*/test/**/*.test.ts',
        '<rootDir>/test/deploy/**/*.test.ts',
      ],
      globalSetup: '<rootDir>/test/setup/global-setup.ts',
      globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
    },
    {
      ...common,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/e2e/**/*.e2e.ts'],
      globalSetup: '<rootDir>/test/setup/global-setup.ts',
      globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
    },
  ],
};
