/**
 * Prints one plain closing line, `jest: N passed, N failed, N skipped`, after the default reporter,
 * so CI logs end with a count any tool can read.
 */
class ClosingLineReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stdout.write(
      `\njest: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${skipped} skipped\n`,
    );
  }
}

module.exports = ClosingLineReporter;
