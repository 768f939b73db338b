/**
 * What changed in the catalogue after a version, read from the database as index records. Drugs come a
 * page at a time; their repeated strings (makers, forms, compositions) are shared through one
 * interner for as long as the catalogue lives.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { drugRecordFromRow, Interner, labRecordFromRow, type DrugRecord, type LabRecord } from '../index/model.ts';
import * as repo from '../repo.ts';

const PAGE = 5000;

export class ChangeReader {
  private readonly db: Kysely<Database>;
  private readonly interner = new Interner();

  constructor(db: Kysely<Database>) {
    this.db = db;
  }

  /** Passes every drug changed after version `after` (every drug for -1) to `add`, in version order. */
  async drugsAfter(after: number, add: (record: DrugRecord) => void): Promise<void> {
    for (let from: repo.ChangesCursor = { seq: after, id: '' }; ; ) {
      const page = await repo.drugsChangedAfter(this.db, after, from, PAGE);
      for (const row of page) add(drugRecordFromRow(row, this.interner));
      if (page.length < PAGE) break;
      const last = page[page.length - 1]!;
      from = { seq: Number(last.seq), id: last.id };
    }
  }

  /** The lab tests changed after version `after` (every one for -1). */
  async labsAfter(after: number): Promise<LabRecord[]> {
    return (await repo.labsChangedAfter(this.db, after)).map(labRecordFromRow);
  }
}
