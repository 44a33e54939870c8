import { readdirSync } from 'node:fs';
import path from 'node:path';
import { ID_REGISTRY, RESOURCE_KINDS, SDK_KINDS } from '../../engine/kinds';
import { ID_PREFIXES } from '../../engine/platform/ids';
import { InvalidInput } from '../../engine/platform/errors';
import { kindNames, type ResourceKind, validateRequest } from '../../engine/store/resource-kind';

const KINDS_DIR = path.resolve(__dirname, '../../engine/kinds');

const isResourceKind = (value: unknown): value is ResourceKind =>
  typeof value === 'object' &&
  value !== null &&
  'kind' in value &&
  'fields' in value &&
  'entityType' in value;

const kinds = Object.entries(RESOURCE_KINDS) as Array<[string, ResourceKind]>;

/** The kinds' index is what the API, the id registry and the SDK bridge loop over. */
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
    expect(new Set(SDK_KINDS).size).toBe(SDK_KINDS.length);
    for (const name of SDK_KINDS) expect(Object.keys(RESOURCE_KINDS)).toContain(name);
  });

  test('the id registry holds the prefix of every kind with generated ids, and no prefix twice', () => {
    for (const [name, kind] of kinds) {
      if (kind.idField === 'symbol') expect(kind.idPrefix).toBeNull();
      else expect(ID_REGISTRY[name]).toBe(kind.idPrefix);
    }
    const generated = kinds.filter(([, kind]) => kind.idPrefix !== null).length;
    expect(Object.keys(ID_REGISTRY)).toHaveLength(Object.keys(ID_PREFIXES).length + generated);
    const prefixes = Object.values(ID_REGISTRY);
    expect(new Set(prefixes).size).toBe(prefixes.length);
    for (const prefix of prefixes) expect(prefix).toMatch(/^[a-z]{3,4}_$/);
  });

  test('every name of a kind derives from its kind and plural', () => {
    expect(kindNames('custom_index', 'custom_indexes')).toEqual({
      path: '/custom_indexes',
      key: 'custom_index',
      plural: 'custom_indexes',
      tag: 'Custom indexes',
      title: 'CustomIndex',
      sdkSingular: 'CustomIndex',
      sdkPlural: 'CustomIndexes',
    });
    for (const [, kind] of kinds) {
      expect(kind.names).toEqual(kindNames(kind.kind, kind.plural));
      expect(kind.noun).toBe(kind.kind.replace(/_/g, ' '));
    }
    // Only the audit type may differ from the title, where the interface files two kinds under one.
    const entityTypes = kinds.filter(([, k]) => k.entityType !== k.names.title).map(([, k]) => k.kind);
    expect(entityTypes.sort()).toEqual(['custom_index', 'private_security']);
  });

  test('each field with a request key has its request schema; a read-only one has none', () => {
    for (const [, kind] of kinds) {
      for (const [name, field] of Object.entries(kind.fields)) {
        if (field.readOnly) {
          expect([name, field.schema]).toEqual([name, undefined]);
          continue;
        }
        for (const key of field.from ?? [name]) expect(kind.request.create.properties).toHaveProperty(key);
      }
    }
  });

  test('the compiled request schema refuses what the API refuses, with the same words', () => {
    const refuse = (kind: ResourceKind, operation: 'create' | 'update', input: unknown) => {
      try {
        validateRequest(kind, operation, input);
      } catch (error) {
        expect(error).toBeInstanceOf(InvalidInput);
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refuse(RESOURCE_KINDS.datastore, 'create', { name: 'D' })).toBe('data is required.');
    expect(refuse(RESOURCE_KINDS.datastore, 'create', { name: 'D', data: [[{}]] })).toMatch(
      /^data\[0\]\[0\] /,
    );
    expect(refuse(RESOURCE_KINDS.portfolio, 'update', { base_currency: 'usd' })).toBe(
      'base_currency must be a 3-letter ISO 4217 currency code.',
    );
    expect(() => validateRequest(RESOURCE_KINDS.portfolio, 'update', { base_currency: 'EUR' })).not.toThrow();
  });
});
