/**
 * The jest configuration of the lavapipe run (gpujs-lavapipe.test.ts): the suite's own, without its
 * global setup (PostgreSQL and Temporal, which the calculation kernels do not need), rooted at the
 * repository so the kernel tests' paths resolve as in the ordinary run.
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
