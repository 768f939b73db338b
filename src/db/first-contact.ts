/**
 * The first contact with PostgreSQL, before the pool and the migrations: the database is created
 * when it does not exist and the role may create it, else one line says what to run; any other
 * failure to connect is one line naming host, port, database and the cause.
 */
import pg from 'pg';

/** A database that cannot be reached or created: its message is the whole story, one line. */
export class DatabaseContactError extends Error {}

interface Target {
  host: string;
  port: string;
  database: string;
  user: string;
}

function targetOf(databaseUrl: string): Target {
  const url = new URL(databaseUrl);
  return {
    host: decodeURIComponent(url.hostname) || 'localhost',
    port: url.port || '5432',
    database: decodeURIComponent(url.pathname.slice(1)) || decodeURIComponent(url.username) || 'postgres',
    user: decodeURIComponent(url.username) || 'postgres',
  };
}

/** What went wrong, in words, from pg's or the socket's error. */
function causeOf(error: unknown, target: Target): string {
  const e = error as { code?: string; message?: string };
  switch (e.code) {
    case 'ECONNREFUSED':
      return 'connection refused (is PostgreSQL running and listening there?)';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `the host name ${target.host} does not resolve`;
    case 'ETIMEDOUT':
      return 'no answer (a firewall, or the wrong address?)';
    case '28P01':
      return `password authentication failed for role "${target.user}"`;
    case '28000':
      return `role "${target.user}" may not connect (pg_hba.conf, or the role does not exist): ${e.message}`;
    default:
      return (e.message ?? String(error)).split('\n')[0]!;
  }
}

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

async function connect(databaseUrl: string, database?: string): Promise<pg.Client> {
  const url = new URL(databaseUrl);
  if (database !== undefined) url.pathname = `/${encodeURIComponent(database)}`;
  const client = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => {});
    throw error;
  }
  return client;
}

/** Connects once; creates the database when it is missing and the role may. Answers whether it created it. */
export async function prepareDatabase(databaseUrl: string): Promise<{ created: boolean }> {
  const target = targetOf(databaseUrl);
  const where = `PostgreSQL at ${target.host}:${target.port}, database "${target.database}"`;
  try {
    await (await connect(databaseUrl)).end();
    return { created: false };
  } catch (error) {
    if ((error as { code?: string }).code !== '3D000') throw new DatabaseContactError(`cannot connect to ${where}: ${causeOf(error, target)}`);
  }
  let maintenance: pg.Client;
  try {
    maintenance = await connect(databaseUrl, 'postgres');
  } catch (error) {
    throw new DatabaseContactError(
      `${where} does not exist, and connecting to the "postgres" database to create it failed (${causeOf(error, target)}): create it with  createdb -h ${target.host} -p ${target.port} -O ${target.user} ${target.database}`,
    );
  }
  try {
    await maintenance.query(`CREATE DATABASE ${quoteIdentifier(target.database)}`);
    return { created: true };
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === '42P04') return { created: false }; // another process created it meanwhile
    const why = code === '42501' ? `role "${target.user}" may not create databases` : causeOf(error, target);
    throw new DatabaseContactError(
      `${where} does not exist and ${why}: run as a superuser  CREATE DATABASE ${quoteIdentifier(target.database)} OWNER ${quoteIdentifier(target.user)};  (or createdb -h ${target.host} -p ${target.port} -O ${target.user} ${target.database})`,
    );
  } finally {
    await maintenance.end().catch(() => {});
  }
}
