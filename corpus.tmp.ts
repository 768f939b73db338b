import { realDrugs, syntheticCorpus } from './bench/search-corpus.ts';
let t = performance.now();
const real = await realDrugs(); console.log('real', real.length, performance.now() - t);
t = performance.now(); const c = syntheticCorpus(real, 250000); console.log('synth', c.length, performance.now() - t);
console.log(c.slice(-5).map(d => d.name));
