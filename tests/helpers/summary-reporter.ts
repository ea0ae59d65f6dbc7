/**
 * A vitest reporter that ends the run with the plain line "N passed, N failed, N skipped", which
 * CI tooling reads regardless of the test runner. The default reporter still prints everything else.
 */
import type { Reporter, TestModule } from "vitest/node";

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0, failed = 0, skipped = 0;
    for (const m of testModules) {
      if (m.state() === "failed" && [...m.children.allTests()].length === 0) failed++; // a file that failed to load
      for (const t of m.children.allTests()) {
        const s = t.result().state;
        if (s === "passed") passed++;
        else if (s === "failed") failed++;
        else skipped++;
      }
    }
    process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
