import { Command, Option } from 'commander';
import {
  createAccount,
  createApiKey,
  createOAuthClient,
  createUser,
  listAccounts,
  listApiKeys,
  listUsers,
  revokeApiKey,
  revokeOAuthClient,
  setUserPermissions,
} from '../../engine/identity/account-store';
import { PERMISSIONS } from '../../engine/platform/principal';
import { loadConfig } from '../../engine/platform/config';
import { type Database, migrateLatest } from '../../engine/platform/database';
import { InvalidInput } from '../../engine/platform/errors';
import { findSecurities, importSecuritiesCsv } from '../../engine/market-data/securities-master';
import { importMarketCsv, type SeriesKind } from '../../engine/market-data/csv-import';
import { listPriceSymbols } from '../../engine/market-data/price-store';
import { publishTemplateFolderAs } from '../../engine/worker-templates/template-folder';
import { addBackupCommands } from './backup-commands';
import { addSecretsCommands } from './secrets-commands';
import { addAuditCommands } from './audit-commands';
import { addRunsCommands } from './runs-commands';
import { openCliDatabase } from './cli-database';

/** What the import summary calls the values of each kind of series. */
const VALUE_WORDS: Readonly<Record<SeriesKind, string>> = {
  price: 'prices',
  fx: 'FX rates',
  rate: 'levels (%)',
  spread: 'levels (%)',
  volume: 'volumes',
};

/** With one account (the usual self-hosted case) --account may be left out. */
async function resolveAccount(db: Database, account: string | undefined): Promise<string> {
  if (account) return account;
  const accounts = await listAccounts(db);
  if (accounts.length === 1) return accounts[0]!.id;
  throw new InvalidInput(
    accounts.length === 0
      ? 'No account exists yet: run `npm start` once, or `pas accounts create`.'
      : 'Several accounts exist: pass --account.',
  );
}

function print(json: boolean, value: unknown, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);
}

async function withDatabase(action: (db: Database) => Promise<void>): Promise<void> {
  const handle = await openCliDatabase(loadConfig());
  try {
    await migrateLatest(handle.db);
    await action(handle.db);
  } finally {
    await handle.close();
  }
}

/** `COLUMN=SYMBOL` pairs of --map; the column name may itself hold spaces (`Adj Close=IND:COMP`). */
function parseMappings(pairs: string[] | undefined): Record<string, string> {
  const map: Record<string, string> = {};
  for (const pair of pairs ?? []) {
    const eq = pair.lastIndexOf('=');
    if (eq <= 0 || eq === pair.length - 1)
      throw new InvalidInput(`--map expects COLUMN=SYMBOL, got "${pair}".`);
    map[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return map;
}

/** A one-line text bar redrawn in place; only for a person watching (a TTY) or when asked for. */
function progressBar(enabled: boolean) {
  return (done: number, total: number, symbol: string) => {
    if (!enabled) return;
    const width = 30;
    const filled = Math.round((done / total) * width);
    process.stderr.write(
      `\r[${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${done}/${total} ${symbol.padEnd(16).slice(0, 16)}`,
    );
    if (done === total) process.stderr.write('\n');
  };
}

export function buildCli(): Command {
  const program = new Command('pas').description(
    "Manage the Portfolio Analytics Service: accounts, users, API keys, OAuth clients, market data, backups, the secrets' master key, run history, audit archives.",
  );
  const json = new Option('--json', 'print JSON for scripts');

  const accounts = program.command('accounts').description('Accounts (tenants)');
  accounts
    .command('create')
    .requiredOption('--name <name>', 'account name')
    .requiredOption('--owner-email <email>', 'e-mail of the owner user')
    .addOption(json)
    .action((opts: { name: string; ownerEmail: string; json?: boolean }) =>
      withDatabase(async (db) => {
        const { accountId, owner } = await createAccount(db, {
          name: opts.name,
          ownerEmail: opts.ownerEmail,
        });
        const key = await createApiKey(db, {
          accountId,
          userId: owner.id,
          description: 'created with the account',
        });
        print(
          !!opts.json,
          { account_id: accountId, owner_email: owner.email, ...key },
          `Account ${accountId} (owner ${owner.email})\nAccount SID: ${key.account_sid}\nAuth token:  ${key.auth_token}`,
        );
      }),
    );
  accounts
    .command('list')
    .addOption(json)
    .action((opts: { json?: boolean }) =>
      withDatabase(async (db) => {
        const rows = await listAccounts(db);
        print(!!opts.json, rows, rows.map((a) => `${a.id}  ${a.name}`).join('\n'));
      }),
    );

  const users = program.command('users').description('Users of an account and their permissions');
  users
    .command('create')
    .requiredOption('--email <email>')
    .option('--name <name>')
    .option('--account <id>')
    .option('--permission <permission...>', `any of: ${PERMISSIONS.join(', ')}`)
    .addOption(json)
    .action(
      (opts: { email: string; name?: string; account?: string; permission?: string[]; json?: boolean }) =>
        withDatabase(async (db) => {
          const user = await createUser(db, await resolveAccount(db, opts.account), {
            email: opts.email,
            name: opts.name,
            permissions: opts.permission,
          });
          print(!!opts.json, user, `User ${user.id} <${user.email}> [${user.permissions.join(', ')}]`);
        }),
    );
  users
    .command('list')
    .option('--account <id>')
    .addOption(json)
    .action((opts: { account?: string; json?: boolean }) =>
      withDatabase(async (db) => {
        const rows = await listUsers(db, await resolveAccount(db, opts.account));
        print(
          !!opts.json,
          rows,
          rows
            .map((u) => `${u.id}  ${u.email}${u.is_owner ? ' (owner)' : ''}  [${u.permissions.join(', ')}]`)
            .join('\n'),
        );
      }),
    );
  users
    .command('permissions')
    .argument('<user-id>')
    .requiredOption('--set <permission...>', `any of: ${PERMISSIONS.join(', ')}`)
    .action((userId: string, opts: { set: string[] }) =>
      withDatabase(async (db) => {
        const user = await setUserPermissions(db, userId, opts.set);
        print(false, null, `User ${user.id}: [${user.permissions.join(', ')}]`);
      }),
    );

  const keys = program.command('keys').description('API keys (account SID + auth token)');
  keys
    .command('create')
    .option('--account <id>')
    .option('--user <id>', 'user the key acts as (default: the owner)')
    .option('--description <text>')
    .addOption(json)
    .action((opts: { account?: string; user?: string; description?: string; json?: boolean }) =>
      withDatabase(async (db) => {
        const key = await createApiKey(db, {
          accountId: await resolveAccount(db, opts.account),
          userId: opts.user,
          description: opts.description,
        });
        print(!!opts.json, key, `Account SID: ${key.account_sid}\nAuth token:  ${key.auth_token}`);
      }),
    );
  keys
    .command('list')
    .option('--account <id>')
    .addOption(json)
    .action((opts: { account?: string; json?: boolean }) =>
      withDatabase(async (db) => {
        const rows = await listApiKeys(db, await resolveAccount(db, opts.account));
        print(
          !!opts.json,
          rows,
          rows
            .map(
              (k) => `${k.sid}  user ${k.user_id}${k.revoked_at ? '  REVOKED' : ''}  ${k.description ?? ''}`,
            )
            .join('\n'),
        );
      }),
    );
  keys
    .command('revoke')
    .argument('<sid>')
    .action((sid: string) =>
      withDatabase(async (db) => {
        await revokeApiKey(db, sid);
        print(false, null, `Revoked ${sid}.`);
      }),
    );

  const oauth = program.command('oauth-clients').description('OAuth 2.0 clients (client credentials grant)');
  oauth
    .command('create')
    .requiredOption('--name <name>')
    .option('--account <id>')
    .option('--user <id>')
    .addOption(json)
    .action((opts: { name: string; account?: string; user?: string; json?: boolean }) =>
      withDatabase(async (db) => {
        const client = await createOAuthClient(db, {
          accountId: await resolveAccount(db, opts.account),
          userId: opts.user,
          name: opts.name,
        });
        print(
          !!opts.json,
          client,
          `Client id:     ${client.client_id}\nClient secret: ${client.client_secret}`,
        );
      }),
    );
  oauth
    .command('revoke')
    .argument('<client-id>')
    .action((clientId: string) =>
      withDatabase(async (db) => {
        await revokeOAuthClient(db, clientId);
        print(false, null, `Revoked ${clientId}.`);
      }),
    );

  const market = program.command('market').description('Market data: daily price series per symbol');
  market
    .command('import')
    .description(
      'Import a wide CSV (a date column, one column per symbol): prices, FX:EURUSD rates, RATE:* and SPREAD:* ' +
        'levels in percent, VOL:<symbol> volumes, or a Volume column beside one price column; re-importing merges by date',
    )
    .argument('<csv>', 'file to import')
    .option('--map <COLUMN=SYMBOL...>', 'symbol of a column (default: SP500=IND:SPX, others keep their name)')
    .option('--date-column <name>', 'date column (default: the column named date, else the first)')
    .option('--column <name...>', 'import only these columns (e.g. "Adj Close")')
    .option('--progress', 'draw the progress bar even when stderr is not a terminal')
    .addOption(json)
    .action(
      (
        file: string,
        opts: { map?: string[]; dateColumn?: string; column?: string[]; progress?: boolean; json?: boolean },
      ) =>
        withDatabase(async (db) => {
          const summary = await importMarketCsv(
            db,
            file,
            { map: parseMappings(opts.map), dateColumn: opts.dateColumn, columns: opts.column },
            progressBar(!!opts.progress || process.stderr.isTTY === true),
          );
          // Bad rows go to stderr line by line, so they are seen even when stdout feeds a script.
          for (const bad of summary.bad_rows) process.stderr.write(`line ${bad.line}: ${bad.message}\n`);
          print(
            !!opts.json,
            summary,
            [
              `Imported ${summary.file}: ${summary.symbols.length} symbols, ${summary.rows} rows, ${summary.points} prices, ` +
                `${summary.first_date ?? '-'} .. ${summary.last_date ?? '-'}, ${summary.bad_rows.length} bad rows.`,
              ...summary.symbols.map(
                (s) =>
                  `  ${s.symbol.padEnd(12)} ${s.column} — ${s.points} ${VALUE_WORDS[s.kind]}, ${s.added} new, ${s.total} stored`,
              ),
            ].join('\n'),
          );
        }),
    );
  market
    .command('symbols')
    .description('List the symbols with stored prices')
    .addOption(json)
    .action((opts: { json?: boolean }) =>
      withDatabase(async (db) => {
        const rows = await listPriceSymbols(db);
        print(
          !!opts.json,
          rows,
          rows.length === 0
            ? 'No market data loaded: run `pas market import <csv>`.'
            : rows
                .map(
                  (r) =>
                    `${r.symbol.padEnd(12)} ${String(r.points).padStart(6)} prices  ${r.first_date} .. ${r.last_date}  ${r.source ?? ''}`,
                )
                .join('\n'),
        );
      }),
    );
  market
    .command('securities')
    .description(
      'Import the securities master from a CSV: symbol and any of name, currency, instrument_type, exchange, ' +
        'country, sector; other columns are kept as attributes. Re-importing merges by symbol',
    )
    .argument('<csv>', 'file to import')
    .addOption(json)
    .action((file: string, opts: { json?: boolean }) =>
      withDatabase(async (db) => {
        const summary = await importSecuritiesCsv(db, file);
        for (const bad of summary.bad_rows) process.stderr.write(`line ${bad.line}: ${bad.message}\n`);
        print(
          !!opts.json,
          summary,
          `Imported ${summary.file}: ${summary.created} securities created, ${summary.updated} updated, ` +
            `${summary.bad_rows.length} bad rows` +
            (summary.extra_columns.length ? `; attributes: ${summary.extra_columns.join(', ')}.` : '.'),
        );
      }),
    );
  market
    .command('show')
    .description('Show the securities master entries of some symbols')
    .argument('<symbol...>', 'symbols')
    .addOption(json)
    .action((symbols: string[], opts: { json?: boolean }) =>
      withDatabase(async (db) => {
        const rows = await findSecurities(db, symbols);
        const missing = symbols.filter((s) => !rows.some((r) => r.symbol === s));
        for (const symbol of missing) process.stderr.write(`${symbol}: not in the securities master\n`);
        print(
          !!opts.json,
          rows,
          rows
            .map((r) =>
              [r.symbol, r.name, r.currency, r.instrument_type, r.exchange, r.country, r.sector]
                .map((v) => v ?? '-')
                .join('  '),
            )
            .join('\n'),
        );
      }),
    );

  const templates = program.command('templates').description('Worker templates of an account');
  templates
    .command('publish')
    .description(
      'Publish a worker template from a folder (template.json and script.ts or script.js): a template of ' +
        'the same name in the account is republished, otherwise one is created. Prints its id',
    )
    .argument('<folder>', 'the template folder')
    .option('--account <id>')
    .addOption(json)
    .action((folder: string, opts: { account?: string; json?: boolean }) =>
      withDatabase(async (db) => {
        const { record, created } = await publishTemplateFolderAs(
          db,
          await resolveAccount(db, opts.account),
          folder,
        );
        print(
          !!opts.json,
          { id: record.id, name: record.name, version: String(record.version), created },
          record.id,
        );
      }),
    );
  addBackupCommands(program);
  addSecretsCommands(program);
  addAuditCommands(program);
  addRunsCommands(program);
  return program;
}

if (require.main === module) {
  buildCli()
    .parseAsync(process.argv)
    .catch((error: unknown) => {
      console.error(error instanceof Error ? error.message : String(error));
      process.exitCode = 1;
    });
}
