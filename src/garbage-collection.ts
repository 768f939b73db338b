/**
 * Collections this process asks V8 for. Node has no API for them: V8's gc extension is made once
 * into a context of its own, with the flag that exposes it turned back off at once, so no global
 * `gc` appears.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

interface Collection {
  type: 'major' | 'minor';
  execution: 'sync';
  /** `last-resort` collects all it can and shrinks the heap's spaces, the young generation too. */
  flavor?: 'regular' | 'last-resort';
}

let gc: ((collection: Collection) => void) | null = null;

export function collectGarbage(collection: Collection): void {
  if (gc === null) {
    setFlagsFromString('--expose-gc');
    try {
      gc = runInNewContext('gc') as (collection: Collection) => void;
    } finally {
      setFlagsFromString('--no-expose-gc');
    }
  }
  gc(collection);
}

/**
 * Gives back what starting left behind, once the service is loaded and before it listens. Loading
 * the sources, the migrations and the search index grow the young generation to its largest (two
 * semi-spaces of 16 MB, all resident) and leave the old one a quarter garbage; V8 shrinks them only
 * after minutes of idleness. Measured on a server that had just started (bench/RESULTS.md, start-up):
 * resident memory 224-229 -> 150-156 MB for about 90 ms, and the young generation then grows only as far
 * as the load needs.
 */
export function releaseStartupMemory(): void {
  collectGarbage({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}
