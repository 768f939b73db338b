// Dependency rules of the code base (issue 17). `npm run lint:deps` fails on any violation that is not in
// .dependency-cruiser-known-violations.json; `npm run lint:deps:baseline` rewrites that file.
// Modules are the folders of src/modules; a module's public face is its service.ts (or index.ts).
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle makes load order matter and couples the files in it into one.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-folder-cycles',
      severity: 'error',
      comment:
        'Folders import each other one way too: a file of one folder importing another folder while a file there imports the first ties the two folders into one, even with no file-level cycle (stored-secrets.ts sits above security/, db/ and access-log/ for this; search\'s import command above its catalogue/ and ingest/). The tests\' folders share support files both ways and are not held to it.',
      scope: 'folder',
      from: { path: '^src/' },
      to: { path: '^src/', circular: true },
    },
    {
      name: 'no-http-below-routes',
      severity: 'error',
      comment:
        "Services, repositories, jobs and the database know nothing of HTTP: only routes files, the front doors (index.ts, module.ts), the app and a module's schemas.ts (the routes' request schemas, see schemas-take-shared-pieces) import src/http/.",
      from: {
        path: '^src/(modules|jobs|db|security)/',
        pathNot: ['^src/modules/[^/]+/(routes|index|schemas)\\.ts$', '^src/modules/(index|module)\\.ts$'],
      },
      to: { path: '^src/http/' },
    },
    {
      name: 'schemas-take-shared-pieces',
      severity: 'error',
      comment:
        "A module's schemas.ts holds the request schemas its routes validate with and its service derives its input types from (Static): of the HTTP layer it takes only the shared pieces (src/http/schemas.ts: Id, Epoch, freeFormObject).",
      from: { path: '^src/modules/[^/]+/schemas\\.ts$' },
      to: { path: '^src/http/', pathNot: '^src/http/schemas\\.ts$' },
    },
    {
      name: 'no-modules-from-http',
      severity: 'error',
      comment: 'src/http/ is the framework layer under the modules; it must not depend on them.',
      from: { path: '^src/http/' },
      to: { path: '^src/modules/' },
    },
    {
      name: 'no-database-in-search-index',
      severity: 'error',
      comment: 'The search index (src/modules/search/index/) is pure (built, queried, snapshotted in memory): it runs without a database.',
      from: { path: '^src/modules/search/index/' },
      to: { path: ['^src/db/', '^node_modules/(kysely|pg|better-sqlite3)/'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'db-below-modules',
      severity: 'error',
      comment: 'The database layer (migrations included: a migration runs the code it shipped with) imports no module code.',
      from: { path: '^src/db/' },
      to: { path: '^src/modules/' },
    },
    {
      name: 'search-index-stands-alone',
      severity: 'error',
      comment: 'The pure search index knows nothing of the catalogue that loads it or the importers that feed it: it imports only its own folder within the module.',
      from: { path: '^src/modules/search/index/' },
      to: { path: '^src/modules/search/', pathNot: '^src/modules/search/index/' },
    },
    {
      name: 'modules-through-front-doors',
      severity: 'error',
      comment: 'The application (app.ts, server.ts, cli.ts and the list of modules) knows a module by its index.ts only.',
      from: { path: ['^src/[^/]+\\.ts$', '^src/modules/index\\.ts$'] },
      to: { path: '^src/modules/[^/]+/', pathNot: '^src/modules/[^/]+/index\\.ts$' },
    },
    {
      name: 'no-module-internals',
      severity: 'error',
      comment: "A module uses another module through its service (or index) only, never its repo or other internals.",
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: '^src/modules/[^/]+/', pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/(service|index)\\.ts$'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // swc parses the sources: dependency-cruiser cannot use TypeScript 7, which has no compiler API yet.
    parser: 'swc',
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
};
