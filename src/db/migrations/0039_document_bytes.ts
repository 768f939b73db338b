import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../dialect.ts';

/**
 * The bytes each business's documents take or were promised, kept by triggers on document_files as
 * its rows change (documents/repo.ts, businessBytes): the limit's check reads a few rows instead of
 * summing every file of the business at each upload (10 ms at 100,000 files). Triggers see every
 * change, whoever makes it: an upload, a delete's sweep, an erasure, a retention rule, a foreign
 * key's cascade, `cps backup`'s edits of its copy.
 *
 * A file counts its size once stored, its declared size before (a form not used yet, an upload's
 * reservation), nothing once it is being removed. On PostgreSQL a business's total is spread over
 * 16 rows, one picked by each transaction's id: concurrent uploads of one business would otherwise
 * queue on one row, each holding it through its commit's flush. A transaction keeps to one row of
 * each business, so two of them share one only when their ids agree (one in 16) and then queue.
 */
function counted(row = ''): string {
  return `case when ${row}state = 'removing' then 0 else coalesce(${row}size, ${row}declared_size, 0) end`;
}

export async function up(db: Kysely<any>): Promise<void> {
  // PostgreSQL runs the migrations in one transaction; SQLite's need one of their own, so that a write
  // of another process cannot come between the triggers and the count, nor a crash leave half of it.
  if (isPostgres(db)) await counted0039(db);
  else await db.transaction().execute(counted0039);
}

async function counted0039(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('document_bytes')
    .addColumn('business_id', 'text', (c) => c.notNull())
    .addColumn('slot', 'integer', (c) => c.notNull())
    .addColumn('bytes', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('document_bytes_pk', ['business_id', 'slot'])
    .execute();

  // The triggers come before the count of what is there: on PostgreSQL making them waits for the
  // writes under way and holds off new ones until this migration commits.
  if (isPostgres(db)) {
    // Each file's bytes as the statement left them, less what they were before it.
    const change = (rows: string) => `
      INSERT INTO document_bytes (business_id, slot, bytes)
      SELECT business_id, (txid_current() % 16)::int, sum(bytes) FROM (${rows}) AS changed
      GROUP BY business_id HAVING sum(bytes) <> 0 ORDER BY business_id
      ON CONFLICT (business_id, slot) DO UPDATE SET bytes = document_bytes.bytes + excluded.bytes;`;
    const after = `SELECT business_id, ${counted()} AS bytes FROM new_files`;
    const before = `SELECT business_id, -${counted()} AS bytes FROM old_files`;
    // plpgsql plans a statement when it first runs it: each branch names only the tables its event has.
    await sql
      .raw(`
      CREATE FUNCTION cps_document_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN ${change(after)}
        ELSIF TG_OP = 'DELETE' THEN ${change(before)}
        ELSE ${change(`${after} UNION ALL ${before}`)}
        END IF;
        RETURN NULL;
      END $$`)
      .execute(db);
    await sql`CREATE TRIGGER document_bytes_insert AFTER INSERT ON document_files REFERENCING NEW TABLE AS new_files
      FOR EACH STATEMENT EXECUTE FUNCTION cps_document_bytes()`.execute(db);
    await sql`CREATE TRIGGER document_bytes_update AFTER UPDATE ON document_files REFERENCING OLD TABLE AS old_files NEW TABLE AS new_files
      FOR EACH STATEMENT EXECUTE FUNCTION cps_document_bytes()`.execute(db);
    await sql`CREATE TRIGGER document_bytes_delete AFTER DELETE ON document_files REFERENCING OLD TABLE AS old_files
      FOR EACH STATEMENT EXECUTE FUNCTION cps_document_bytes()`.execute(db);
  } else {
    const add = (row: 'new' | 'old', sign: string) => `
      INSERT INTO document_bytes (business_id, slot, bytes)
      VALUES (${row}.business_id, 0, ${sign}${counted(`${row}.`)})
      ON CONFLICT (business_id, slot) DO UPDATE SET bytes = bytes + excluded.bytes;`;
    await sql.raw(`CREATE TRIGGER document_bytes_insert AFTER INSERT ON document_files BEGIN ${add('new', '')} END`).execute(db);
    const changed = `${counted('new.')} <> ${counted('old.')} OR new.business_id <> old.business_id`;
    await sql
      .raw(`CREATE TRIGGER document_bytes_update AFTER UPDATE ON document_files WHEN ${changed} BEGIN ${add('new', '')} ${add('old', '-')} END`)
      .execute(db);
    await sql.raw(`CREATE TRIGGER document_bytes_delete AFTER DELETE ON document_files BEGIN ${add('old', '-')} END`).execute(db);
  }

  await sql
    .raw(`INSERT INTO document_bytes (business_id, slot, bytes) SELECT business_id, 0, sum(${counted()}) FROM document_files GROUP BY business_id`)
    .execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) await sql`DROP FUNCTION IF EXISTS cps_document_bytes() CASCADE`.execute(db);
  else for (const name of ['insert', 'update', 'delete']) await sql.raw(`DROP TRIGGER IF EXISTS document_bytes_${name}`).execute(db);
  await db.schema.dropTable('document_bytes').execute();
}
