import { sql, type Kysely } from 'kysely';

/**
 * A patient merged into one that was merged in turn names the end of that chain: lookups follow one
 * step (a merge now moves the earlier ones along, patients' repointMerged).
 */
export async function up(db: Kysely<any>): Promise<void> {
  // Each pass shortens every chain by one step; merges never made a cycle, and the bound keeps one
  // from running forever.
  for (let pass = 0; pass < 1000; pass++) {
    const result = await sql`update patients set merged_into = (select later.merged_into from patients later where later.id = patients.merged_into)
      where merged_into in (select id from patients where merged_into is not null)`.execute(db);
    if (Number(result.numAffectedRows ?? 0n) === 0) return;
  }
}

export async function down(): Promise<void> {}
