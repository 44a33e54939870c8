import { randomBytes } from 'node:crypto';
import knexFactory from 'knex';
import { createAccount } from '../../engine/identity/account-store';
import { connectDatabase, migrateLatest } from '../../engine/platform/database';
import { migrationSource } from '../../engine/platform/migrations-source';
import { newId } from '../../engine/platform/ids';
import { parseDefinition } from '../../engine/workflows/workflow-definition';
import { findWorkflow, workflowView } from '../../engine/workflows/workflow-store';

/** 20261122020000_workflows moves the skeleton's `workflows` rows into `entities`, intact. */
test('a workflow stored before the move reads back the same, and still runs', async () => {
  const admin = knexFactory({
    client: 'pg',
    connection: process.env.TEST_DATABASE_ADMIN_URL!,
    pool: { min: 0, max: 1 },
  });
  const name = `pas_wfmove_${randomBytes(5).toString('hex')}`;
  await admin.raw(`CREATE DATABASE ${name}`);
  const url = new URL(process.env.TEST_DATABASE_ADMIN_URL!);
  url.pathname = `/${name}`;
  const db = connectDatabase(url.toString(), 2);
  try {
    // Every migration before this one, then a row in the skeleton's format.
    const all = await migrationSource.getMigrations([]);
    const before = all.findIndex(([migration]) => migration === '20261122020000_workflows');
    for (let i = 0; i < before; i++) await db.migrate.up({ migrationSource });
    const { accountId } = await createAccount(db, { name: 'Old', ownerEmail: `old-${name}@example.com` });
    const [s, b, e] = [newId('worker'), newId('worker'), newId('worker')];
    const id = newId('workflow');
    const created = new Date('2026-11-01T10:00:00Z');
    await db('workflows').insert({
      id,
      account_id: accountId,
      workspace: 'desk',
      name: 'Old style',
      description: 'from the skeleton',
      tags: ['legacy'],
      starter_worker_id: s,
      workers: JSON.stringify([
        { id: s, name: 'S', type: 'STARTER', next: [b] },
        { id: b, name: 'B', type: 'BASIC', script: 'function main(a) { return a.inputs; }', next: [e] },
        { id: e, name: 'E', type: 'ENDER' },
      ]),
      created_at: created,
      updated_at: created,
    });

    // The move is the next migration applied; later ones may follow it.
    expect((await migrateLatest(db))[0]).toBe('20261122020000_workflows');
    expect(await db.schema.hasTable('workflows')).toBe(false);
    const workflow = await findWorkflow(db, accountId, id, 'desk');
    expect(workflowView(workflow)).toEqual({
      id,
      name: 'Old style',
      description: 'from the skeleton',
      tags: ['legacy'],
      status: 'OK',
      trigger_type: 'MANUAL',
      trigger_config: {},
      trigger_enabled: false,
      starter_worker_id: s,
      gui: { offset_x: 0, offset_y: 0, zoom: 1 },
      on_failure: null,
      workers: [
        { id: s, name: 'S', type: 'STARTER', template_id: null, script: null, script_inputs: {}, next: [b] },
        {
          id: b,
          name: 'B',
          type: 'BASIC',
          template_id: null,
          script: 'function main(a) { return a.inputs; }',
          script_inputs: {},
          next: [e],
        },
        { id: e, name: 'E', type: 'ENDER', template_id: null, script: null, script_inputs: {}, next: [] },
      ],
      workspace: 'desk',
      created: created.getTime() / 1000,
      updated: created.getTime() / 1000,
      version: '1',
    });
    expect(parseDefinition(workflow.workers).plan).toEqual({ starterId: s, enderId: e, barrierOf: {} });
  } finally {
    await db.destroy();
    await admin.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.destroy();
  }
});
