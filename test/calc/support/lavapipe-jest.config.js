/**
 * The jest configuration of the lavapipe run (gpujs-lavapipe.test.ts): the suite's own, without its
 * global setup (the HTTP API test uses the outer run's PostgreSQL, whose TEST_DATABASE_ADMIN_URL it
 * inherits), rooted at the repository so the kernel tests' paths resolve as in the ordinary run.
 */
const path = require('node:path');
const base = require('../../../jest.config.js');

module.exports = {
  ...base,
  rootDir: path.resolve(__dirname, '..', '..', '..'),
  globalSetup: undefined,
  globalTeardown: undefined,
  reporters: ['default'],
};
