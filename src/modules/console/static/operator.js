// The operator's pages: businesses and their API clients (created, listed, revoked and their secrets
// rotated through the admin API; a secret is shown once), the access log across businesses, and the service's readiness. The API's own calls.
import { api, ApiError } from './api.js';
import { field, h, replace, requests, table, tableRows } from './dom.js';
import { t } from './strings.js';
import { stampIn } from './time.js';

const SCOPES = [
  'search',
  'appointment:write',
  'appointment:complete',
  'clinic:write',
  'cases:read',
  'cases:write',
  'documents:read',
  'documents:write',
  'notification:admin',
  'webhook:admin',
  'patient:read',
  'patient:write',
  'audit:read',
  'privacy:export',
  'privacy:erase',
];
const FRONT_DESK = ['appointment:write', 'appointment:complete', 'clinic:write', 'patient:read', 'patient:write'];
const operator = (session) => session.kind === 'operator';

/** A form that shows its failure beside it. */
function form(id, title, children, submit) {
  const error = h('p', { class: 'error', role: 'alert', hidden: true });
  const element = h(
    'form',
    {
      class: 'card',
      id,
      onsubmit: async (event) => {
        event.preventDefault();
        error.hidden = true;
        try {
          await submit(new FormData(element), element);
        } catch (failure) {
          error.textContent = t('app.error', { message: failure.message });
          error.hidden = false;
        }
      },
    },
    h('h2', {}, title),
    children,
    error,
  );
  return element;
}

/** Credentials just made: shown once, never kept by the page. */
function credentials(area, created, zone) {
  replace(
    area,
    h(
      'div',
      { class: 'card', id: 'made' },
      h('h2', {}, t(created.previous_secret_expires_at !== undefined ? 'ops.rotated' : 'ops.made')),
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, t('ops.business_id')),
        h('dd', {}, h('code', { id: 'made-business' }, created.business_id)),
        h('dt', {}, t('signin.client_id')),
        h('dd', {}, h('code', { id: 'made-client' }, created.client_id)),
        h('dt', {}, t('signin.client_secret')),
        h('dd', {}, h('code', { id: 'made-secret' }, created.client_secret)),
        created.scopes ? [h('dt', {}, t('ops.scopes')), h('dd', {}, created.scopes.join(' '))] : null,
        created.previous_secret_expires_at
          ? [h('dt', {}, t('ops.old_secret_until')), h('dd', {}, stampIn(zone, created.previous_secret_expires_at))]
          : null,
      ),
      h('p', { class: 'error' }, t('ops.secret_once')),
    ),
  );
}

/** A business's API clients (scopes, state, Rotate with the grace period and Revoke) and its last week's usage. */
async function showClients(area, business, { zone, made, announce, refresh }) {
  const path = `/admin/v1/businesses/${encodeURIComponent(business.business_id)}/clients`;
  const [{ clients }, { days }] = await Promise.all([
    api('GET', path),
    api('GET', `/admin/v1/businesses/${encodeURIComponent(business.business_id)}/usage?days=7`),
  ]);
  // The hours chosen stay chosen when the list is drawn again after a rotation or a revocation.
  const grace = h('input', { id: 'ops-grace', name: 'grace_hours', type: 'number', min: 0, max: 720, step: 1, value: area.querySelector('#ops-grace')?.value || '24', inputmode: 'numeric' });
  const act = async (work) => {
    try {
      await work();
    } catch (failure) {
      announce(t('app.error', { message: failure.message }));
    }
  };
  const state = (client) =>
    client.disabled_at === null
      ? client.previous_secret_expires_at !== null
        ? h('span', { class: 'badge wait' }, t('ops.client_grace', { until: stampIn(zone, client.previous_secret_expires_at) }))
        : h('span', { class: 'badge good' }, t('ops.client_active'))
      : h('span', { class: 'badge bad' }, t('ops.client_revoked', { at: stampIn(zone, client.disabled_at) }));
  const actions = (client) => {
    const clientPath = `${path}/${encodeURIComponent(client.client_id)}`;
    return client.disabled_at === null
      ? h(
          'div',
          { class: 'actions' },
          h(
            'button',
            {
              type: 'button',
              class: 'secondary',
              'aria-label': t('ops.rotate_label', { client: client.client_id }),
              onclick: () =>
                act(async () => {
                  const hours = Number(grace.value);
                  const rotated = await api('POST', `${clientPath}/rotate-secret`, { grace_seconds: Math.round(hours * 3600) });
                  credentials(made, { business_id: business.business_id, ...rotated }, zone);
                  announce(t('ops.done_rotate'));
                  await showClients(area, business, { zone, made, announce, refresh });
                }),
            },
            t('ops.rotate'),
          ),
          h(
            'button',
            {
              type: 'button',
              class: 'danger',
              'aria-label': t('ops.revoke_label', { client: client.client_id }),
              onclick: () =>
                act(async () => {
                  await api('POST', `${clientPath}/revoke`, {});
                  announce(t('ops.done_revoke', { client: client.client_id }));
                  await showClients(area, business, { zone, made, announce, refresh });
                  await refresh();
                }),
            },
            t('ops.revoke'),
          ),
        )
      : null;
  };
  replace(
    area,
    h(
      'section',
      { class: 'card', id: 'ops-clients', 'aria-labelledby': 'ops-clients-title' },
      h('h2', { id: 'ops-clients-title', tabindex: '-1' }, t('ops.clients_of', { name: business.name })),
      h('p', {}, h('code', {}, business.business_id)),
      h('div', { class: 'field' }, h('label', { for: 'ops-grace' }, t('ops.grace_hours')), grace),
      clients.length === 0
        ? h('p', {}, t('ops.no_clients'))
        : table({
            id: 'ops-clients-table',
            columns: [
              { title: t('signin.client_id'), head: true, cell: (client) => h('code', {}, client.client_id) },
              { title: t('ops.scopes'), cell: (client) => client.scopes.join(' ') },
              { title: t('ops.created'), cell: (client) => stampIn(zone, client.created_at) },
              { title: t('ops.state'), cell: state },
              { title: t('ops.actions'), cell: actions },
            ],
            rows: clients,
            rowProps: (client) => ({ 'data-client': client.client_id }),
          }),
      table({
        id: 'ops-usage-table',
        caption: t('ops.usage_title'),
        columns: [
          { title: t('ops.day'), head: true, cell: (day) => day.day },
          { title: t('ops.requests'), num: true, cell: (day) => day.requests },
          { title: t('ops.failures'), num: true, cell: (day) => day.failures },
          { title: t('ops.deliveries'), num: true, cell: (day) => day.deliveries },
          { title: t('ops.delivery_failures'), num: true, cell: (day) => day.delivery_failures },
        ],
        rows: days,
        rowProps: (day) => ({ 'data-day': day.day }),
      }),
    ),
  );
}

export const businessesPage = {
  name: 'businesses',
  title: 'nav.businesses',
  allowed: operator,
  async render(main, { announce, session }) {
    const zone = session.timezone;
    const made = h('div', { role: 'status' });
    const listing = h('div', { id: 'ops-businesses' });
    const clientsArea = h('div', { id: 'ops-clients-area' });
    const refresh = async () => {
      const { businesses } = await api('GET', '/admin/v1/businesses');
      replace(
        listing,
        businesses.length === 0
          ? h('p', {}, t('ops.no_businesses'))
          : table({
              id: 'ops-businesses-table',
              caption: t('ops.businesses_list'),
              columns: [
                { title: t('ops.business_name'), head: true, cell: (business) => business.name },
                { title: t('ops.business_id'), cell: (business) => h('code', {}, business.business_id) },
                { title: t('ops.created'), cell: (business) => stampIn(zone, business.created_at) },
                { title: t('ops.active_clients'), num: true, cell: (business) => business.clients },
                {
                  title: t('ops.actions'),
                  cell: (business) =>
                    h(
                      'button',
                      {
                        type: 'button',
                        class: 'secondary',
                        'aria-label': t('ops.show_clients_label', { name: business.name }),
                        onclick: async () => {
                          try {
                            await showClients(clientsArea, business, { zone, made, announce, refresh });
                            clientsArea.querySelector('h2')?.focus();
                          } catch (failure) {
                            announce(t('app.error', { message: failure.message }));
                          }
                        },
                      },
                      t('ops.show_clients'),
                    ),
                },
              ],
              rows: businesses,
              rowProps: (business) => ({ 'data-business': business.business_id }),
            }),
      );
    };
    main.append(
      h('h1', { tabindex: '-1' }, t('ops.businesses_title')),
      h('p', {}, t('ops.businesses_intro')),
      made,
      listing,
      clientsArea,
      form(
        'ops-business',
        t('ops.new_business'),
        [field(t('ops.business_name'), { name: 'name', required: true, maxlength: 200, id: 'ops-business-name' }), h('button', { type: 'submit' }, t('ops.create'))],
        async (values, element) => {
          const created = await api('POST', '/admin/v1/businesses', { name: values.get('name') });
          credentials(made, created, zone);
          element.reset();
          announce(t('ops.done_business'));
          await refresh();
        },
      ),
      form(
        'ops-client',
        t('ops.new_client'),
        [
          field(t('ops.business_id'), { name: 'business_id', required: true, maxlength: 200, id: 'ops-client-business', spellcheck: 'false' }),
          h(
            'fieldset',
            {},
            h('legend', {}, t('ops.scopes')),
            h(
              'div',
              { class: 'columns' },
              SCOPES.map((scope) =>
                h(
                  'div',
                  { class: 'choice' },
                  h('input', { type: 'checkbox', name: 'scopes', value: scope, id: `scope-${scope.replace(':', '-')}`, checked: FRONT_DESK.includes(scope) }),
                  h('label', { for: `scope-${scope.replace(':', '-')}` }, scope),
                ),
              ),
            ),
          ),
          h('button', { type: 'submit' }, t('ops.create')),
        ],
        async (values) => {
          const businessId = String(values.get('business_id')).trim();
          const created = await api('POST', `/admin/v1/businesses/${encodeURIComponent(businessId)}/clients`, { scopes: values.getAll('scopes') });
          credentials(made, created, zone);
          announce(t('ops.done_client'));
          await refresh();
        },
      ),
    );
    await refresh();
  },
};

export const auditPage = {
  name: 'audit',
  title: 'nav.audit',
  allowed: operator,
  async render(main, { session }) {
    const zone = session.timezone;
    const area = h('div', { id: 'audit-area' });
    const auditColumns = [
      { title: t('ops.at'), cell: (entry) => stampIn(zone, entry.at) },
      { title: t('ops.business_id'), cell: (entry) => h('code', {}, entry.business_id) },
      { title: t('ops.client'), cell: (entry) => h('code', {}, entry.client_id ?? '–') },
      { title: t('ops.operation'), head: true, cell: (entry) => entry.operation },
      { title: t('ops.action'), cell: (entry) => entry.action },
      { title: t('ops.status'), num: true, cell: (entry) => entry.status ?? '–' },
      { title: t('ops.seq'), num: true, cell: (entry) => entry.seq },
    ];
    let next = null;
    const businessInput = h('input', { id: 'audit-business', name: 'business_id', maxlength: 200, spellcheck: 'false' });
    const auditRequest = requests();
    const load = async (more) => {
      const isNewest = auditRequest();
      const query = new URLSearchParams({ limit: '50' });
      if (businessInput.value.trim()) query.set('business_id', businessInput.value.trim());
      if (more && next) query.set('offset', next);
      const page = await api('GET', `/admin/v1/audit/events?${query}`);
      if (!isNewest()) return;
      next = page.next_token;
      const body = more ? area.querySelector('tbody') : null;
      if (body) body.append(...tableRows({ columns: auditColumns, rows: page.events }));
      else
        replace(
          area,
          page.events.length === 0 ? h('p', {}, t('ops.no_entries')) : table({ id: 'audit-table', columns: auditColumns, rows: page.events }),
        );
      moreButton.hidden = !next;
    };
    const moreButton = h('button', { type: 'button', class: 'secondary', hidden: true, onclick: () => void load(true) }, t('ops.more'));
    main.append(
      h('h1', { tabindex: '-1' }, t('ops.audit_title')),
      h('p', {}, t('ops.audit_intro')),
      h(
        'form',
        {
          class: 'card inline',
          onsubmit: (event) => {
            event.preventDefault();
            void load(false);
          },
        },
        h('div', { class: 'field' }, h('label', { for: 'audit-business' }, t('ops.business_filter')), businessInput),
        h('button', { type: 'submit' }, t('desk.show')),
      ),
      area,
      moreButton,
    );
    await load(false);
  },
};

/** Bytes as a person reads them: 1 decimal place of KB, MB or GB (1000s, as file managers do). */
function size(bytes) {
  if (bytes === null) return '–';
  const [value, unit] = bytes >= 1e9 ? [bytes / 1e9, 'GB'] : bytes >= 1e6 ? [bytes / 1e6, 'MB'] : bytes >= 1e3 ? [bytes / 1e3, 'kB'] : [bytes, 'B'];
  return `${unit === 'B' ? value : value.toFixed(1)} ${unit}`;
}

/** The last runs of cps backup and cps restore (GET /admin/v1/operations), and the last backup that succeeded. */
function backupsSection(backups, zone) {
  const good = backups.last_succeeded;
  return [
    h('h2', { id: 'backups-title' }, t('ops.backups_title')),
    h(
      'p',
      { id: 'backups-last', class: good ? null : 'error' },
      good ? t('ops.backup_last_ok', { at: stampIn(zone, good.finished_at), file: good.file ?? '–', size: size(good.bytes) }) : t('ops.backup_never_ok'),
    ),
    backups.runs.length === 0
      ? h('p', { id: 'backups-none' }, t('ops.backups_none'))
      : table({
          id: 'backups-table',
          labelledBy: 'backups-title',
          columns: [
            { title: t('ops.backup_started'), head: true, cell: (run) => stampIn(zone, run.started_at) },
            { title: t('ops.backup_command'), cell: (run) => h('code', {}, `cps ${run.command}`) },
            {
              title: t('ops.backup_outcome'),
              cell: (run) => h('span', { class: `badge ${run.outcome === 'succeeded' ? 'good' : 'bad'}` }, t(`ops.backup_${run.outcome}`)),
            },
            { title: t('ops.backup_file'), cell: (run) => (run.file === null ? '–' : h('code', {}, run.file)) },
            { title: t('ops.backup_size'), num: true, cell: (run) => size(run.bytes) },
            { title: t('ops.backup_took'), num: true, cell: (run) => t('ops.seconds', { seconds: ((run.finished_at - run.started_at) / 1000).toFixed(1) }) },
            { title: t('ops.backup_error'), cell: (run) => run.error ?? '–' },
          ],
          rows: backups.runs,
        }),
  ];
}

export const healthPage = {
  name: 'health',
  title: 'nav.health',
  allowed: operator,
  async render(main, { session, announce }) {
    const readiness = api('GET', '/ready').catch((failure) => {
      if (!(failure instanceof ApiError) || failure.status !== 503) throw failure;
      return failure.body;
    });
    const [ready, operations] = await Promise.all([readiness, api('GET', '/admin/v1/operations')]);
    const lastRun = operations.retention.last_run;
    // Verifying reads every entry of every chain, which takes longer as the log grows: it runs when asked.
    const chainsArea = h('div', { id: 'chains-area' });
    const verifyButton = h(
      'button',
      {
        type: 'button',
        id: 'chains-verify',
        class: 'secondary',
        onclick: async () => {
          verifyButton.disabled = true;
          replace(chainsArea, h('p', {}, t('ops.chains_checking')));
          try {
            const verdict = await api('GET', '/admin/v1/audit/verify');
            replace(chainsArea, chainsVerdict(verdict));
            announce(t(verdict.ok ? 'ops.chains_ok' : 'ops.chains_broken'));
          } catch (failure) {
            replace(chainsArea);
            announce(t('app.error', { message: failure.message }));
          } finally {
            verifyButton.disabled = false;
          }
        },
      },
      t('ops.chains_verify'),
    );
    main.append(
      h('h1', { tabindex: '-1' }, t('ops.health_title')),
      h('p', { id: 'health-verdict', class: ready.status === 'ready' ? 'ok' : 'error' }, t(ready.status === 'ready' ? 'ops.ready' : 'ops.not_ready')),
      table({
        id: 'health-table',
        stack: false,
        columns: [
          { title: t('ops.check'), head: true, cell: ([name]) => name },
          { title: t('ops.state'), cell: ([, ok]) => h('span', { class: `badge ${ok ? 'good' : 'bad'}` }, t(ok ? 'ops.ok' : 'ops.failing')) },
        ],
        rows: Object.entries(ready.checks),
      }),
      h('h2', { id: 'queue-title' }, t('ops.queue_title')),
      operations.queue.length === 0
        ? h('p', { id: 'queue-empty' }, t('ops.queue_empty'))
        : table({
            id: 'queue-table',
            labelledBy: 'queue-title',
            columns: [
              { title: t('ops.job_kind'), head: true, cell: (row) => h('code', {}, row.kind) },
              { title: t('ops.state'), cell: (row) => row.status },
              { title: t('ops.jobs'), num: true, cell: (row) => row.count },
            ],
            rows: operations.queue,
          }),
      h('h2', {}, t('ops.retention_title')),
      h(
        'p',
        { id: 'retention-last' },
        lastRun === null
          ? t('ops.retention_never')
          : t(lastRun.status === 'succeeded' ? 'ops.retention_ok' : 'ops.retention_failed', {
              at: stampIn(session.timezone, lastRun.finished_at),
              error: lastRun.last_error ?? '',
            }),
      ),
      ...backupsSection(operations.backups, session.timezone),
      h('h2', { id: 'chains-title' }, t('ops.chains_title')),
      h('p', {}, t('ops.chains_intro')),
      verifyButton,
      chainsArea,
    );
  },
};

/** `cps audit verify`'s verdict: the whole, and each chain's. */
function chainsVerdict(verdict) {
  return [
    h('p', { id: 'chains-verdict', class: verdict.ok ? 'ok' : 'error' }, t(verdict.ok ? 'ops.chains_ok' : 'ops.chains_broken')),
    table({
      id: 'chains-table',
      labelledBy: 'chains-title',
      columns: [
        { title: t('ops.business_id'), head: true, cell: (chain) => h('code', {}, chain.business_id) },
        { title: t('ops.entries'), num: true, cell: (chain) => chain.entries },
        {
          title: t('ops.state'),
          cell: (chain) =>
            chain.ok
              ? h('span', { class: 'badge good' }, t('ops.chain_ok'))
              : h('span', { class: 'badge bad' }, t('ops.chain_broken', { seq: chain.broken?.seq ?? '?', reason: chain.broken?.reason ?? '' })),
        },
      ],
      rows: verdict.chains,
      rowProps: (chain) => ({ 'data-chain': chain.business_id }),
    }),
  ];
}
