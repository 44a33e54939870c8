/**
 * The console's browser code (api/console/ui), bundled by esbuild when the first page is asked for
 * and kept in memory: nothing is built at install time and nothing built is committed, so the page
 * can never be older than its source. Names carry a content hash, so a browser may cache them for good.
 */
import path from 'node:path';
import { gzipSync } from 'node:zlib';

export interface ConsoleAsset {
  readonly body: Buffer;
  /**
   * The body gzipped once, at zlib's highest level, when the bundle is built: the asset never
   * changes, so browsers get the smallest form without the per-response compressor's cost (its level
   * is set for answers made per request, RESPONSE_GZIP_LEVEL).
   */
  readonly gzipped: Buffer;
  readonly type: string;
}

export interface ConsoleBundle {
  /** The page every console address answers with. */
  readonly html: string;
  /** By file name (`console.<hash>.js`, `console.<hash>.css`). */
  readonly assets: ReadonlyMap<string, ConsoleAsset>;
}

const UI = path.join(__dirname, 'ui');

let building: Promise<ConsoleBundle> | null = null;

/** The bundle, built once per process (a failed build is retried by the next request). */
export function consoleBundle(): Promise<ConsoleBundle> {
  building ??= buildBundle().catch((error: unknown) => {
    building = null;
    throw error;
  });
  return building;
}

async function buildBundle(): Promise<ConsoleBundle> {
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: [path.join(UI, 'main.ts')],
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['chrome115', 'firefox115', 'safari16'],
    write: false,
    outdir: 'out',
    // The code editor loads only on the pages that show one: the first load stays small.
    splitting: true,
    entryNames: 'console.[hash]',
    chunkNames: 'chunk.[hash]',
    legalComments: 'none',
    logLevel: 'silent',
    loader: { '.css': 'css' },
  });
  const assets = new Map<string, ConsoleAsset>();
  let script = '';
  let style = '';
  for (const file of result.outputFiles) {
    const name = path.basename(file.path);
    const ext = path.extname(name);
    const body = Buffer.from(file.contents);
    assets.set(name, {
      body,
      gzipped: gzipSync(body, { level: 9 }),
      type: ext === '.js' ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8',
    });
    // The entry is named console.[hash]; split code (the editor, loaded when needed) chunk.[hash].
    if (ext === '.js' && name.startsWith('console.')) script = name;
    if (ext === '.css' && name.startsWith('console.')) style = name;
  }
  if (!script) throw new Error('the console bundle has no entry script');
  const html = [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<title>Console · Portfolio Analytics</title>',
    style ? `<link rel="stylesheet" href="/console/assets/${style}">` : '',
    `<script type="module" src="/console/assets/${script}"></script>`,
    '</head>',
    '<body>',
    '<noscript>The console needs JavaScript.</noscript>',
    '<div id="app"></div>',
    '</body>',
    '</html>',
  ].join('\n');
  return { html, assets };
}

/**
 * Whether an Accept-Encoding header accepts gzip: `gzip` or `*` with a q-value above 0 (RFC 9110
 * §12.5.3), a `gzip;q=0` refusing it even beside `*`.
 */
export function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  let gzip: number | null = null;
  let any: number | null = null;
  for (const entry of header.toLowerCase().split(',')) {
    const [coding, ...params] = entry.split(';').map((part) => part.trim());
    const q = params.find((param) => param.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    if (coding === 'gzip' || coding === 'x-gzip') gzip = Number.isFinite(weight) ? weight : 0;
    else if (coding === '*') any = Number.isFinite(weight) ? weight : 0;
  }
  return (gzip ?? any ?? 0) > 0;
}
