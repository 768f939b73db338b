/**
 * The relevance query set: queries typed the way prescriptions are written, each with the results a
 * prescriber expects at the top. Run as a test (relevance.test.ts) and by the engine comparison
 * (bench/search-engines.ts). `top` patterns must match the first results in order; `within:
 * [pattern, n]` must match one of the first n results.
 */
export interface Case {
  q: string;
  lab?: boolean;
  top?: RegExp[];
  within?: [RegExp, number];
  /** Also check drug_name_match of the first result. */
  exact?: boolean;
}

export const QUERIES: Record<string, Case[]> = {
  'brand names': [
    { q: 'augmentin', top: [/^Augmentin /i] },
    { q: 'azithral', top: [/^Azithral /] },
    { q: 'allegra', top: [/^Allegra /] },
    { q: 'montair', top: [/^Montair /] },
    { q: 'pantocid', top: [/^Pantocid Tablet$/] },
    { q: 'glycomet', top: [/^Glycomet Tablet$/] },
    { q: 'okacet', top: [/^Okacet Tablet$/] },
    { q: 'levocet', top: [/^Levocet /, /^Levocet /] },
    { q: 'grilinctus', top: [/^Grilinctus/] },
    { q: 'moxikind', top: [/^Moxikind-CV/] },
  ],
  'brand names with strength': [
    { q: 'dolo 650', top: [/^Dolo 650 Tablet$/] },
    { q: 'augmentin 625', top: [/^Augmentin 625 Duo Tablet$/] },
    { q: 'azithral 500', top: [/^Azithral 500 Tablet$/] },
    { q: 'telma 40', top: [/^Telma 40 Tablet$/] },
    { q: 'thyronorm 50', top: [/^Thyronorm 50mcg Tablet$/] },
    { q: 'montair 10', top: [/^Montair 10 Tablet$/] },
    { q: 'allegra 120', top: [/^Allegra 120mg Tablet$/] },
    { q: 'rosuvas 10', top: [/^Rosuvas 10 Tablet$/] },
    { q: 'rantac 150', top: [/^Rantac 150 Tablet$/] },
    { q: 'ecosprin 75', top: [/^Ecosprin 75 Tablet$/] },
  ],
  'exact names': [
    { q: 'Augmentin 625 Duo Tablet', top: [/^Augmentin 625 Duo Tablet$/], exact: true },
    { q: 'zerodol-sp tablet', top: [/^Zerodol-SP Tablet$/], exact: true },
    { q: 'PAN 40 TABLET', top: [/^Pan 40 Tablet$/], exact: true },
  ],
  'spacing variants': [
    { q: 'PAN40', top: [/^Pan 40 Tablet$/] },
    { q: 'dolo650', top: [/^Dolo 650 Tablet$/] },
    { q: 'telma40', top: [/^Telma 40 Tablet$/] },
    { q: 'augmentin625', top: [/^Augmentin 625 Duo Tablet$/] },
    { q: 'azithral500', top: [/^Azithral 500 Tablet$/] },
    { q: 'zerodolsp', top: [/^Zerodol-SP Tablet$/] },
  ],
  'hyphen variants': [
    { q: 'zerodol sp', top: [/^Zerodol-SP Tablet$/] },
    { q: 'pan d', top: [/^Pan-D Capsule/] },
    { q: 'glycomet-gp 1', top: [/^Glycomet-GP 1 /] },
    { q: 'montair lc', top: [/^Montair-LC Tablet$/] },
    { q: 'meftal spas', top: [/^Meftal-Spas/] },
    { q: 'taxim-o 200', top: [/^Taxim-O 200 Tablet$/] },
  ],
  typos: [
    { q: 'augmantin', top: [/^Augmentin /i] },
    { q: 'azithrl', top: [/^Azithral /] },
    { q: 'glycomt', top: [/^Glycomet /] },
    { q: 'rosuvass', top: [/^Rosuvas /] },
    { q: 'paracitamol', within: [/^(Paracetamol \d|Dolo|PCM|Crocin|Calpol|P 125|PUC|Medomol)/, 1] },
    { q: 'cetrizine', within: [/^(Cetirizine \d|Hicet|Alerid|Zyrtec|Cetzine|Okacet)/, 1] },
    { q: 'amoxicilin', within: [/amoxy?cillin/i, 2] },
    { q: 'pantoprazol', top: [/^(Pantoprazole \d|P2I|Ulpan|PAN 20|Pan 40|Pansec|Pantocid)/i] },
    { q: 'metformn', within: [/metformin|glycomet/i, 3] },
  ],
  transpositions: [
    { q: 'montiar', top: [/^Montair /] },
    { q: 'thyronrom', top: [/^Thyronorm /] },
    { q: 'augmenitn', top: [/^Augmentin /i] },
    { q: 'paracetmaol', within: [/^(Paracetamol \d|Dolo|PCM|Crocin|Calpol|P 125|PUC|Medomol)/, 1] },
  ],
  'generic salts': [
    { q: 'paracetamol', within: [/^(Paracetamol \d|Dolo|PCM|Crocin|Calpol|P 125|PUC|Medomol)/, 1] },
    { q: 'pcm', top: [/^PCM /] },
    { q: 'pcm 650', within: [/650/, 1] },
    { q: 'cetirizine', within: [/^(Cetirizine \d|Hicet|Alerid|Zyrtec|Cetzine)/, 1] },
    { q: 'telmisartan', within: [/^(Telmisartan \d+ mg Tablet|Telma|Teli|Tetan)/, 1] },
    { q: 'amlodipine', within: [/^(Amlodipine \d+(\.\d+)? mg Tablet|Amlong|Amlip|Amloz|Stamlo|Amlokind)/, 1] },
    { q: 'atorvastatin', within: [/^(Atorvastatin \d+ mg Tablet|Atorva|Xtor|Avas|Lipvas|Storvas)/, 1] },
    { q: 'levocetirizine', within: [/levocetirizine|^(Levocet|Xyzal|LCZ)/i, 3] },
  ],
  'two-salt combinations': [
    { q: 'amoxycillin clavulanic', within: [/clav|CV/i, 3] },
    { q: 'pantoprazole domperidone', within: [/-?D\b/, 3] },
    { q: 'telmisartan hydrochlorothiazide', within: [/-?H\b/, 3] },
    { q: 'aceclofenac paracetamol', within: [/P\b|AP\b|XREL|Zerodol/i, 3] },
    { q: 'montelukast levocetirizine', within: [/LC|M\b|L\b|Montas|MTnL/i, 3] },
  ],
  'forms and units': [
    { q: 'dolo 650 tab', top: [/^Dolo 650 Tablet$/] },
    { q: 'ascoril syp', within: [/^Ascoril .*Syrup/, 1] },
    { q: 'thyronorm 50 mcg', top: [/^Thyronorm 50mcg Tablet$/] },
    { q: 'thyronorm 50mcg', top: [/^Thyronorm 50mcg Tablet$/] },
    { q: 'pan 40mg', top: [/^Pan 40 Tablet$/] },
  ],
  'lab abbreviations and names': [
    { q: 'cbc', lab: true, top: [/complete blood count/i] },
    { q: 'lft', lab: true, top: [/liver function/i] },
    { q: 'kft', lab: true, top: [/kidney function|renal function/i] },
    { q: 'rft', lab: true, top: [/kidney function|renal function/i] },
    { q: 'tft', lab: true, top: [/thyroid/i] },
    { q: 'tsh', lab: true, top: [/\bTSH\b|thyroid stimulating/i] },
    { q: 'hba1c', lab: true, top: [/HbA1c|glycated|glycosylated/i] },
    { q: 'esr', lab: true, top: [/erythrocyte sedimentation/i] },
    { q: 'crp', lab: true, top: [/c.reactive protein/i] },
    { q: 'fbs', lab: true, top: [/fasting/i] },
    { q: 'ppbs', lab: true, top: [/post.?prandial/i] },
    { q: 'lipid profile', lab: true, top: [/lipid/i] },
    { q: 'vitamin d', lab: true, top: [/vitamin d/i] },
    { q: 'thyroid profile', lab: true, top: [/thyroid profile/i] },
    { q: 'urine routine', lab: true, top: [/urine routine/i] },
    { q: 'hemoglobin', lab: true, top: [/^ha?emoglobin/i] },
    { q: 'serum creatinine', lab: true, top: [/creatinine/i] },
    { q: 'complete blood count', lab: true, top: [/complete blood count/i] },
  ],
};

/** The failures of one query, given the names an engine returned (best first). */
export function judge(c: Case, names: string[], firstExact?: boolean): string[] {
  const failures: string[] = [];
  const shown = `"${c.q}" -> [${names.slice(0, 5).join(' | ')}]`;
  c.top?.forEach((pattern, i) => {
    if (!pattern.test(names[i] ?? '')) failures.push(`${shown}: #${i + 1} should match ${pattern}`);
  });
  if (c.within && !names.slice(0, c.within[1]).some((name) => c.within![0].test(name))) {
    failures.push(`${shown}: ${c.within[0]} not in the first ${c.within[1]}`);
  }
  if (c.exact && firstExact === false) failures.push(`${shown}: drug_name_match should be true`);
  return failures;
}
