/**
 * Readers of catalogue files, streamed row by row. The layout is detected from the header:
 *
 * - drugs: the A-Z medicine dataset of India (`short_composition1`), the 1mg medicine details set
 *   (`Medicine Name`, `Composition`), the 1mg product pages (`Drug Name`, `Packaging`), and the project's
 *   own NDJSON (catalogue/drugs.ndjson: name, manufacturer_name, product_type, product_sku,
 *   composition [{salt, strength}], is_otc, discontinued, action_class, atc);
 * - lab tests: LOINC Universal Lab Orders CSV (`LOINC_NUM`, `LONG_COMMON_NAME`) and the project's NDJSON
 *   (catalogue/labs.ndjson: name, abbreviations, category, description, preparation, specimen, loinc, price).
 *
 * A row that cannot be used yields null (counted as skipped).
 */
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { parse as parseSync } from 'csv-parse/sync';
import { AppError } from '../../../errors.ts';
import { labCategoryFromLoinc, parseComposition, type Ingredient } from '../index/derive.ts';
import type { DrugInput, LabInput } from '../index/model.ts';
import { clean } from '../index/normalize.ts';

export interface Source<T> {
  layout: string;
  totalBytes: number;
  bytesRead(): number;
  rows: AsyncIterable<T | null>;
}

type Row = Record<string, string>;

async function firstLine(file: string): Promise<string> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(64 * 1024);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return (
      buffer
        .subarray(0, bytesRead)
        .toString('utf8')
        .replace(/^\uFEFF/, '')
        .split(/\r?\n/)
        .find((line) => line.trim() !== '') ?? ''
    );
  } finally {
    await handle.close();
  }
}

function csvHeader(line: string): string[] {
  return line.split(',').map((h) => h.replace(/^"|"$/g, '').trim());
}

/**
 * A record csv-parse refuses (a quoted part followed by more text: `"Corona House" Block C,...`) read
 * the lenient way spreadsheet tools do: the quoted part and the text after it form one field.
 */
function lenientFields(record: string): string[] {
  const fields: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < record.length; i++) {
    const ch = record[i]!;
    if (quoted) {
      if (ch === '"' && record[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') {
        quoted = false;
      } else {
        field += ch;
      }
    } else if (ch === '"') {
      quoted = true;
    } else if (ch === ',') {
      fields.push(field);
      field = '';
    } else {
      field += ch;
    }
  }
  fields.push(field);
  return fields.map((f) => f.trim());
}

/**
 * Rows of a CSV file, one record at a time: physical lines are joined while a quote is open (a field
 * with line breaks), each record is parsed by csv-parse, and a record it refuses is read leniently, so
 * one bad row never derails the rest of the file.
 */
async function* csvRows(stream: NodeJS.ReadableStream): AsyncGenerator<Row | null> {
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  let header: string[] | null = null;
  let pending = '';
  let quotes = 0;
  for await (const line of lines) {
    pending = pending === '' ? line : `${pending}\n${line}`;
    for (const ch of line) if (ch === '"') quotes++;
    if (quotes % 2 === 1) continue;
    const record = pending.replace(/^\uFEFF/, '');
    pending = '';
    quotes = 0;
    if (record.trim() === '') continue;
    let fields: string[];
    try {
      fields = (parseSync(record, { relax_quotes: true, trim: true, relax_column_count: true }) as string[][])[0] ?? [];
    } catch {
      fields = lenientFields(record);
    }
    if (header === null) {
      header = fields.map((h) => h.trim());
      continue;
    }
    const row: Row = {};
    header.forEach((name, i) => {
      row[name] = fields[i] ?? '';
    });
    yield row;
  }
  if (pending.trim() !== '' && header !== null) yield null;
}

async function* ndjsonRows(stream: NodeJS.ReadableStream): AsyncGenerator<Record<string, unknown> | null> {
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  for await (const line of lines) {
    const text = line.replace(/^\uFEFF/, '').trim();
    if (text === '') continue;
    try {
      const value: unknown = JSON.parse(text);
      yield value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
    } catch {
      yield null;
    }
  }
}

async function openSource<T>(
  file: string,
  detect: (header: string, isJson: boolean) => { layout: string; read: (stream: NodeJS.ReadableStream) => AsyncIterable<T | null> } | null,
): Promise<Source<T>> {
  let totalBytes: number;
  try {
    totalBytes = (await stat(file)).size;
  } catch {
    throw new AppError(400, `cannot read ${file}`);
  }
  const header = await firstLine(file);
  const detected = detect(header, header.trimStart().startsWith('{'));
  if (!detected) throw new AppError(400, `unrecognised layout of ${file} (header: ${header.slice(0, 120)})`);
  const stream = createReadStream(file);
  return { layout: detected.layout, totalBytes, bytesRead: () => stream.bytesRead, rows: detected.read(stream) };
}

const str = (value: unknown): string | undefined => {
  if (typeof value === 'number') return String(value);
  const text = clean(value);
  return text === '' ? undefined : text;
};

const flag = (value: unknown): boolean | undefined => {
  if (typeof value === 'boolean') return value;
  const text = clean(String(value ?? '')).toLowerCase();
  if (['true', 'yes', 'y', '1'].includes(text)) return true;
  if (['false', 'no', 'n', '0'].includes(text)) return false;
  return undefined;
};

function ndjsonComposition(value: unknown): Ingredient[] | undefined {
  if (typeof value === 'string') return parseComposition(value);
  if (!Array.isArray(value)) return undefined;
  const out: Ingredient[] = [];
  for (const item of value) {
    if (typeof item === 'string') out.push(...parseComposition(item));
    else if (item && typeof item === 'object') {
      const salt = str((item as Record<string, unknown>).salt);
      if (salt) out.push({ salt, strength: (str((item as Record<string, unknown>).strength) ?? '').replace(/\s+(?=[a-zµ%])/gi, '') });
    }
  }
  return out;
}

/** The project's NDJSON drug record. `action_class` may be a name or an object; `atc` joins it. */
export function drugFromNdjson(value: Record<string, unknown> | null): DrugInput | null {
  if (!value) return null;
  const name = str(value.name);
  const maker = str(value.manufacturer_name);
  if (!name || !maker) return null;
  let actionClass: Record<string, unknown> | undefined;
  if (value.action_class && typeof value.action_class === 'object' && !Array.isArray(value.action_class))
    actionClass = { ...(value.action_class as Record<string, unknown>) };
  else if (str(value.action_class)) actionClass = { name: str(value.action_class) };
  const atc = str(value.atc);
  if (atc) actionClass = { ...actionClass, atc_code: atc };
  const input: DrugInput = { name, manufacturer_name: maker };
  const productType = str(value.product_type);
  if (productType) input.product_type = productType;
  const sku = str(value.product_sku);
  if (sku) input.product_sku = sku;
  const composition = ndjsonComposition(value.composition);
  if (composition && composition.length > 0) input.composition = composition;
  if (typeof value.is_otc === 'boolean') input.is_otc = value.is_otc;
  if (typeof value.discontinued === 'boolean') input.discontinued = value.discontinued;
  if (typeof value.soa === 'boolean') input.soa = value.soa;
  if (actionClass) input.action_class = actionClass;
  return input;
}

function drugFromAz(row: Row): DrugInput | null {
  const name = str(row.name);
  const maker = str(row.manufacturer_name);
  if (!name || !maker) return null;
  const input: DrugInput = { name, manufacturer_name: maker, composition: parseComposition(row.short_composition1, row.short_composition2) };
  const sku = str(row.pack_size_label);
  if (sku) input.product_sku = sku;
  const discontinued = flag(row.Is_discontinued);
  if (discontinued !== undefined) input.discontinued = discontinued;
  return input;
}

function drugFromOnemgDetails(row: Row): DrugInput | null {
  const name = str(row['Medicine Name']);
  const maker = str(row.Manufacturer);
  if (!name || !maker) return null;
  return { name, manufacturer_name: maker, composition: parseComposition(row.Composition) };
}

function drugFromOnemgPages(row: Row): DrugInput | null {
  const name = str(row['Drug Name']);
  const maker = str(row.Manufacturer);
  if (!name || !maker) return null;
  const input: DrugInput = { name, manufacturer_name: maker, composition: parseComposition(row.Composition) };
  const sku = str(row.Packaging);
  if (sku && !/not mentioned/i.test(sku)) input.product_sku = sku;
  // "Prescription Required" says it is not over the counter; "Not Mentioned" says nothing.
  const prescription = clean(row.Prescription).toLowerCase();
  if (prescription.startsWith('prescription')) input.is_otc = false;
  return input;
}

async function* mapRows<A, B>(rows: AsyncIterable<A | null>, map: (row: A) => B | null): AsyncGenerator<B | null> {
  for await (const row of rows) yield row === null ? null : map(row);
}

export function openDrugSource(file: string): Promise<Source<DrugInput>> {
  return openSource<DrugInput>(file, (header, isJson) => {
    if (isJson) return { layout: 'ndjson', read: (s) => mapRows(ndjsonRows(s), (row) => drugFromNdjson(row)) };
    const columns = new Set(csvHeader(header));
    if (columns.has('short_composition1') && columns.has('name')) return { layout: 'az-medicines', read: (s) => mapRows(csvRows(s), drugFromAz) };
    if (columns.has('Medicine Name') && columns.has('Composition'))
      return { layout: '1mg-medicine-details', read: (s) => mapRows(csvRows(s), drugFromOnemgDetails) };
    if (columns.has('Drug Name') && columns.has('Composition'))
      return { layout: '1mg-product-pages', read: (s) => mapRows(csvRows(s), drugFromOnemgPages) };
    return null;
  });
}

export function labFromNdjson(value: Record<string, unknown> | null): LabInput | null {
  if (!value) return null;
  const name = str(value.name);
  if (!name) return null;
  const input: LabInput = { name };
  if (Array.isArray(value.abbreviations)) input.abbreviations = value.abbreviations.map(str).filter((a): a is string => a !== undefined);
  for (const key of ['category', 'description', 'preparation', 'specimen', 'loinc'] as const) {
    const text = str(value[key]);
    if (text) input[key] = text;
  }
  const price = typeof value.price === 'number' ? value.price : typeof value.price === 'string' ? Number(value.price) : NaN;
  if (Number.isFinite(price) && price >= 0) input.price = price;
  return input;
}

function labFromLoinc(row: Row): LabInput | null {
  const name = str(row.LONG_COMMON_NAME);
  if (!name) return null;
  const input: LabInput = { name };
  const code = str(row.LOINC_NUM);
  if (code) input.loinc = code;
  const category = labCategoryFromLoinc(name);
  if (category) input.category = category;
  return input;
}

export function openLabSource(file: string): Promise<Source<LabInput>> {
  return openSource<LabInput>(file, (header, isJson) => {
    if (isJson) return { layout: 'ndjson', read: (s) => mapRows(ndjsonRows(s), (row) => labFromNdjson(row)) };
    const columns = new Set(csvHeader(header));
    if (columns.has('LOINC_NUM') && columns.has('LONG_COMMON_NAME'))
      return { layout: 'loinc-lab-orders', read: (s) => mapRows(csvRows(s), labFromLoinc) };
    return null;
  });
}
