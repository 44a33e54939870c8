import { readdirSync } from 'node:fs';
import path from 'node:path';
import { RESOURCE_KINDS, SDK_KINDS } from '../../engine/kinds';
import { ID_PREFIXES } from '../../engine/platform/ids';
import type { ResourceKind } from '../../engine/store/resource-kind';

const KINDS_DIR = path.resolve(__dirname, '../../engine/kinds');

const isResourceKind = (value: unknown): value is ResourceKind =>
  typeof value === 'object' &&
  value !== null &&
  'kind' in value &&
  'fields' in value &&
  'entityType' in value;

/** The kinds' index is what the API and the SDK bridge loop over: a declaration left out of it is dead. */
describe('engine/kinds/index.ts', () => {
  test('lists every kind declared in engine/kinds/, once', async () => {
    const files = readdirSync(KINDS_DIR).filter((file) => file.endsWith('.ts') && file !== 'index.ts');
    const modules = await Promise.all(files.map((file) => import(path.join(KINDS_DIR, file))));
    const declared = modules
      .flatMap((module) => Object.values(module as Record<string, unknown>))
      .filter(isResourceKind);
    const listed = Object.values(RESOURCE_KINDS);
    expect(new Set(listed).size).toBe(listed.length);
    expect(listed.map((kind) => kind.kind).sort()).toEqual(declared.map((kind) => kind.kind).sort());
  });

  test('SDK_KINDS names listed kinds, each once', () => {
    const names = SDK_KINDS.map((entry) => entry.kind);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(Object.keys(RESOURCE_KINDS)).toContain(name);
  });

  // The id registry sits in the platform, below the kinds, so it cannot import them: this holds the
  // two together instead.
  test('each kind with generated ids has a prefix of its own in the id registry', () => {
    const prefixes = Object.values(RESOURCE_KINDS)
      .map((kind) => kind.idPrefix)
      .filter((prefix) => prefix !== null);
    expect(new Set(prefixes).size).toBe(prefixes.length);
    for (const prefix of prefixes) expect(Object.keys(ID_PREFIXES)).toContain(prefix);
  });
});
