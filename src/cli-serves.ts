/**
 * Whether a command line runs the server: `serve`, after any `--env-file FILE`. Its own file, free of
 * imports, because bin/cps.js asks before it loads anything else (the malloc settings, the spare
 * index builder) and again to keep the process running once main returns 0.
 */
export function keepsRunning(argv: readonly string[]): boolean {
  return (argv[0] === '--env-file' ? argv[2] : argv[0]) === 'serve';
}
