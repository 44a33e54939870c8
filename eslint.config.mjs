// Lint: typescript-eslint, the import-boundary table of docs/architecture.md, and Temporal's rule that
// workflow code (deterministic, replayed) imports no Node builtins.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';
import { builtinModules } from 'node:module';

const layer = (name) => [`**/${name}`, `**/${name}/**`, `${name}/**`];
// `**/api` would also catch the OpenTelemetry API package, which is no layer of ours.
const forbid = (names, message) => ({ group: [...names.flatMap(layer), '!@opentelemetry/api'], message });

/** What no file of engine/ imports, whatever its room. */
const engineOutside = [
  forbid(
    ['api', 'workers', 'ops', 'scripts'],
    'engine/ is the domain and its platform: it may import calc and plugin types, never an entry room (api, workers, ops) or scripts.',
  ),
  {
    group: layer('plugins'),
    allowTypeImports: true,
    message: 'engine/ may import only types from plugins/.',
  },
];

/**
 * The rooms of engine/ in layer order (docs/architecture.md, "Inside engine/"): each room imports only
 * the rooms listed before it (plus calc/ and plugin types), never one listed after it, so the tree
 * reads as layers and no loop between rooms can form.
 */
const ENGINE_LAYERS = [
  'platform',
  'store',
  'identity',
  'secrets',
  'kinds',
  'market-data',
  'calculations',
  'reports',
  'files',
  'integrations',
  'worker-templates',
  'workflows',
  'sdk',
];

const engineLayers = Object.fromEntries(
  ENGINE_LAYERS.map((room, i) => {
    const before = ENGINE_LAYERS.slice(0, i);
    const after = ENGINE_LAYERS.slice(i + 1);
    const message =
      `engine/${room}/ may import only the rooms before it (${before.join(', ') || 'none'}), ` +
      `not ${after.join(', ')}.`;
    return [
      `engine/${room}/**`,
      after.length > 0 ? [...engineOutside, forbid(after, message)] : engineOutside,
    ];
  }),
);

/** Who may import whom (docs/architecture.md, "Top level"). No arrow runs upward. */
const boundaries = {
  'api/**': [
    forbid(
      ['workers', 'plugins', 'migrations', 'ops'],
      'api/ is HTTP only: it may import engine (and calc types).',
    ),
    { group: layer('calc'), allowTypeImports: true, message: 'api/ may import only types from calc/.' },
  ],
  'engine/**': engineOutside,
  ...engineLayers,
  'workers/**': [forbid(['api', 'ops'], 'workers/ may import engine, plugins and calc, never api or ops.')],
  'ops/**': [
    forbid(
      ['api', 'workers'],
      'ops/ starts processes by path and runs engine code: it imports neither api nor workers.',
    ),
  ],
  'plugins/**': [
    forbid(['api', 'engine', 'workers', 'calc', 'migrations'], 'plugins/ imports nothing above it.'),
  ],
  'calc/**': [
    forbid(
      ['api', 'engine', 'workers', 'plugins', 'migrations'],
      'calc/ is pure: it imports nothing above it.',
    ),
  ],
  'migrations/**': [
    forbid(['api', 'workers', 'plugins', 'calc'], 'migrations/ are self-contained schema changes.'),
  ],
};

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  // What git ignores (installs, data, the suites' virtualenvs and artifacts) is no source of ours.
  {
    ignores: [
      'node_modules/**',
      'data/**',
      'tools/**',
      'coverage/**',
      'dist/**',
      '.test-data/**',
      'bench/out/**',
      '.venvs/**',
      '.schemathesis/**',
      'test-artifacts/**',
      // AssemblyScript (v128, load<T>, __heap_base): compiled and checked by asc, not TypeScript.
      'calc/wasm/assembly/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
    },
  },
  ...Object.entries(boundaries).map(([files, patterns]) => ({
    files: [files],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns }] },
  })),
  {
    files: ['workers/workflows/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'Workflow code is deterministic: no Node builtins.',
          })),
          patterns: [
            forbid(['api', 'plugins', 'calc'], 'Workflow code imports only @temporalio/workflow and types.'),
            {
              group: layer('engine'),
              allowTypeImports: true,
              message: 'Workflow code may import only types from engine/.',
            },
            {
              group: ['../activities', '../activities/**'],
              allowTypeImports: true,
              message: 'Workflows import activity types only; call them through proxyActivities.',
            },
          ],
        },
      ],
    },
  },
  {
    // The web console's browser code (bundled by esbuild, api/console/assets.ts).
    files: ['api/console/ui/**'],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
