import { spawnSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');

/**
 * Mesa's lavapipe in tools/lavapipe (scripts/install-lavapipe.mjs fetches it the first time,
 * as pinned .debs unpacked with `dpkg -x`), and the environment that makes a process see it:
 * VK_ICD_FILENAMES and LD_LIBRARY_PATH, for the processes a test starts, never for the machine.
 * Where it cannot be had (another OS or architecture, a missing library) this throws the
 * installer's one line saying what is missing: the tests that need it fail, never skip.
 */
export function lavapipeEnvironment(): { VK_ICD_FILENAMES: string; LD_LIBRARY_PATH: string } {
  const installed = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'install-lavapipe.mjs')], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 300_000,
  });
  if (installed.status !== 0)
    throw new Error(installed.stderr.trim().split('\n').pop() ?? 'lavapipe could not be had');
  const root = installed.stdout.trim().split('\n').pop()!;
  return {
    VK_ICD_FILENAMES: path.join(root, 'usr', 'share', 'vulkan', 'icd.d', 'lvp_icd.json'),
    LD_LIBRARY_PATH: path.join(root, 'usr', 'lib', 'x86_64-linux-gnu'),
  };
}
