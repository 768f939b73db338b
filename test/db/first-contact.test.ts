/**
 * The first contact with PostgreSQL: a missing database is created when the role may, else one line
 * says what to run; a connection failure is one line naming host, port, database and cause. Only
 * loopback is dialled.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { DatabaseContactError, prepareDatabase } from '../../src/db/first-contact.ts';
import { freePort, runCli } from '../process.ts';
import { DIALECT } from '../support.ts';

const PG_URL = process.env.CPS_TEST_DATABASE_URL;

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function urlFor(database: string, user?: string): string {
  const url = new URL(PG_URL!);
  url.pathname = `/${database}`;
  if (user) url.username = user;
  return url.toString();
}

describe(`PostgreSQL first contact (${DIALECT})`, { skip: PG_URL ? false : 'PostgreSQL only (CPS_TEST_DATABASE_URL)' }, () => {
  const name = `cps_t_first_${randomBytes(4).toString('hex')}`;
  const role = `cps_t_nocreate_${randomBytes(4).toString('hex')}`;
  after(async () => {
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin(`DROP ROLE IF EXISTS ${role}`);
  });

  it('creates a missing database when the role may, and cps migrate then runs on it', async () => {
    assert.deepEqual(await prepareDatabase(urlFor(name)), { created: true });
    assert.deepEqual(await prepareDatabase(urlFor(name)), { created: false });
    await admin(`DROP DATABASE ${name} WITH (FORCE)`);
    const migrated = await runCli(['migrate'], { DATABASE_URL: urlFor(name) });
    assert.equal(migrated.code, 0, migrated.stderr);
    assert.equal(JSON.parse(migrated.stdout).database, 'postgres');
  });

  it('says in one line what to run when the role may not create it', async () => {
    await admin(`CREATE ROLE ${role} LOGIN NOCREATEDB`);
    const missing = `cps_t_missing_${randomBytes(4).toString('hex')}`;
    const { hostname, port } = new URL(PG_URL!);
    await assert.rejects(prepareDatabase(urlFor(missing, role)), (error) => {
      assert.ok(error instanceof DatabaseContactError);
      assert.equal(
        error.message,
        `PostgreSQL at ${hostname}:${port || '5432'}, database "${missing}" does not exist and role "${role}" may not create databases: run as a superuser  CREATE DATABASE "${missing}" OWNER "${role}";  (or createdb -h ${hostname} -p ${port || '5432'} -O ${role} ${missing})`,
      );
      return true;
    });
    const result = await runCli(['migrate'], { DATABASE_URL: urlFor(missing, role) });
    assert.equal(result.code, 1);
    assert.equal(result.stderr.split('\n').length, 2, 'one line, no stack');
    assert.match(result.stderr, /^cps: PostgreSQL at .* does not exist and role .* may not create databases: run as a superuser {2}CREATE DATABASE/);
  });

  it('a refused connection is one line naming host, port, database and cause, for migrate and serve alike', async () => {
    const port = await freePort();
    const url = `postgres://cps@127.0.0.1:${port}/clinic`;
    const line = `cps: cannot connect to PostgreSQL at 127.0.0.1:${port}, database "clinic": connection refused (is PostgreSQL running and listening there?)\n`;
    for (const command of ['migrate', 'serve']) {
      const result = await runCli([command], { DATABASE_URL: url, PORT: String(await freePort()) });
      assert.deepEqual([result.code, result.stderr], [1, line], command);
    }
  });
});
