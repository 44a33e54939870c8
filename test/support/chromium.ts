import { existsSync } from 'node:fs';

/** Debian's package, where the machine has it (.ci/run need not install it). */
export const DEBIAN_CHROMIUM = '/usr/bin/chromium';

/**
 * The flags known to work headless as root on these machines: without the background-networking
 * ones Chromium keeps dialling Google's hosts, which the closed network refuses.
 */
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * The Chromium the browser tests drive: Debian's when installed, else the build the npm package
 * `@sparticuz/chromium` ships inside itself (a registry package, so `npm ci` brings it with no
 * download of its own). `PAS_TEST_CHROMIUM=sparticuz` picks the package's even where Debian's exists.
 */
export async function testChromium(): Promise<{ executablePath: string; args: string[]; source: string }> {
  if (process.env.PAS_TEST_CHROMIUM !== 'sparticuz' && existsSync(DEBIAN_CHROMIUM)) {
    return { executablePath: DEBIAN_CHROMIUM, args: FLAGS, source: 'debian' };
  }
  const { default: packaged } = await import('@sparticuz/chromium');
  const executablePath = await packaged.executablePath();
  return { executablePath, args: [...new Set([...packaged.args, ...FLAGS])], source: '@sparticuz/chromium' };
}
