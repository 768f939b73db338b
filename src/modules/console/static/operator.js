// The operator's pages: businesses and their API clients (created through the admin API; a secret is
// shown once), the access log across businesses, and the service's readiness. The API's own calls.
import { api, ApiError } from './api.js';
import { field, h, replace } from './dom.js';
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
function credentials(area, created) {
  replace(
    area,
    h(
      'div',
      { class: 'card', id: 'made' },
      h('h2', {}, t('ops.made')),
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
      ),
      h('p', { class: 'error' }, t('ops.secret_once')),
    ),
  );
}

export const businessesPage = {
  name: 'businesses',
  title: 'nav.businesses',
  allowed: operator,
  render(main, { announce }) {
    const made = h('div', { role: 'status' });
    main.append(
      h('h1', { tabindex: '-1' }, t('ops.businesses_title')),
      h('p', {}, t('ops.businesses_intro')),
      made,
      form(
        'ops-business',
        t('ops.new_business'),
        [field(t('ops.business_name'), { name: 'name', required: true, maxlength: 200, id: 'ops-business-name' }), h('button', { type: 'submit' }, t('ops.create'))],
        async (values, element) => {
          const created = await api('POST', '/admin/v1/businesses', { name: values.get('name') });
          credentials(made, created);
          element.reset();
          announce(t('ops.done_business'));
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
          credentials(made, created);
          announce(t('ops.done_client'));
        },
      ),
    );
  },
};

export const auditPage = {
  name: 'audit',
  title: 'nav.audit',
  allowed: operator,
  async render(main, { session }) {
    const zone = session.timezone;
    const table = h('div', { id: 'audit-area' });
    let next = null;
    const businessInput = h('input', { id: 'audit-business', name: 'business_id', maxlength: 200, spellcheck: 'false' });
    const load = async (more) => {
      const query = new URLSearchParams({ limit: '50' });
      if (businessInput.value.trim()) query.set('business_id', businessInput.value.trim());
      if (more && next) query.set('offset', next);
      const page = await api('GET', `/admin/v1/audit/events?${query}`);
      next = page.next_token;
      const rows = page.events.map((entry) =>
        h(
          'tr',
          {},
          h('td', { 'data-label': t('ops.at') }, stampIn(zone, entry.at)),
          h('td', { 'data-label': t('ops.business_id') }, h('code', {}, entry.business_id)),
          h('td', { 'data-label': t('ops.client') }, h('code', {}, entry.client_id ?? '–')),
          h('th', { scope: 'row', 'data-label': t('ops.operation') }, entry.operation),
          h('td', { 'data-label': t('ops.action') }, entry.action),
          h('td', { class: 'num', 'data-label': t('ops.status') }, entry.status ?? '–'),
          h('td', { class: 'num', 'data-label': t('ops.seq') }, entry.seq),
        ),
      );
      const body = more ? table.querySelector('tbody') : null;
      if (body) body.append(...rows);
      else
        replace(
          table,
          page.events.length === 0
            ? h('p', {}, t('ops.no_entries'))
            : h(
                'div',
                { class: 'table-wrap' },
                h(
                  'table',
                  { class: 'stack', id: 'audit-table' },
                  h('thead', {}, h('tr', {}, ['ops.at', 'ops.business_id', 'ops.client', 'ops.operation', 'ops.action', 'ops.status', 'ops.seq'].map((key) => h('th', { scope: 'col' }, t(key))))),
                  h('tbody', {}, rows),
                ),
              ),
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
      table,
      moreButton,
    );
    await load(false);
  },
};

export const healthPage = {
  name: 'health',
  title: 'nav.health',
  allowed: operator,
  async render(main) {
    let ready;
    try {
      ready = await api('GET', '/ready');
    } catch (failure) {
      if (!(failure instanceof ApiError) || failure.status !== 503) throw failure;
      ready = failure.body;
    }
    main.append(
      h('h1', { tabindex: '-1' }, t('ops.health_title')),
      h('p', { id: 'health-verdict', class: ready.status === 'ready' ? 'ok' : 'error' }, t(ready.status === 'ready' ? 'ops.ready' : 'ops.not_ready')),
      h(
        'div',
        { class: 'table-wrap' },
        h(
          'table',
          { id: 'health-table' },
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, t('ops.check')), h('th', { scope: 'col' }, t('ops.state')))),
          h(
            'tbody',
            {},
            Object.entries(ready.checks).map(([name, ok]) =>
              h('tr', {}, h('th', { scope: 'row' }, name), h('td', {}, h('span', { class: `badge ${ok ? 'good' : 'bad'}` }, t(ok ? 'ops.ok' : 'ops.failing')))),
            ),
          ),
        ),
      ),
    );
  },
};
