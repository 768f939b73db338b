#!/usr/bin/env node
// The `cps` command. Node >= 22.18 runs the TypeScript sources directly.
import { main } from '../src/cli.ts';

const code = await main(process.argv.slice(2));
if (!(process.argv[2] === 'serve' && code === 0)) process.exit(code);
