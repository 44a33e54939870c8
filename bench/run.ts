import { runCalcBench } from './calc.bench';
import { runFileUploadBench } from './file-upload.bench';
import { runHttpPipelineBench } from './http-pipeline.bench';

/** `npm run bench`: every benchmark prints its figures beside a baseline measured in the same run. */
async function main(): Promise<void> {
  await runHttpPipelineBench();
  await runFileUploadBench();
  await runCalcBench();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
