import { runBackupBench } from './backup.bench';
import { runCalcBench } from './calc.bench';
import { runClusterBench } from './cluster.bench';
import { runFileUploadBench } from './file-upload.bench';
import { runGpuBench } from './gpu.bench';
import { runHttpPipelineBench } from './http-pipeline.bench';
import { runOutboundBench } from './outbound.bench';
import { runPythonStepBench } from './python-step.bench';
import { runRecordsBench } from './records.bench';
import { runWorkflowBench } from './workflow.bench';

/** Every benchmark by name; `npm run bench -- NAME…` runs those, `npm run bench` all of them. */
const BENCHES: Record<string, (argv: readonly string[]) => Promise<void>> = {
  'http-pipeline': (argv) => runHttpPipelineBench(argv),
  'file-upload': () => runFileUploadBench(),
  calc: (argv) => runCalcBench(argv),
  gpu: (argv) => runGpuBench(argv),
  workflow: (argv) => runWorkflowBench(argv),
  cluster: (argv) => runClusterBench(argv),
  backup: (argv) => runBackupBench(argv),
  'python-step': (argv) => runPythonStepBench(argv),
  outbound: (argv) => runOutboundBench(argv),
  records: (argv) => runRecordsBench(argv),
};

/**
 * `npm run bench`: every benchmark prints its figures beside a baseline measured in the same run.
 * Names select benchmarks; flags (`--quick`, …) go to each selected one.
 */
async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const names = argv.filter((arg) => !arg.startsWith('--'));
  const unknown = names.filter((name) => !(name in BENCHES));
  if (unknown.length > 0) {
    throw new Error(
      `unknown benchmark ${unknown.join(', ')}; choose from ${Object.keys(BENCHES).join(', ')}`,
    );
  }
  for (const [name, run] of Object.entries(BENCHES)) {
    if (names.length === 0 || names.includes(name)) await run(argv);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
