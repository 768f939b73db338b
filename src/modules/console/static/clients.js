// A partner's developer: the API clients of their own business (the API answers for the signed-in
// business only), their scopes and state. Changes stay with the operator.
import { api } from './api.js';
import { h, table } from './dom.js';
import { t } from './strings.js';
import { stampIn } from './time.js';

export const clientsPage = {
  name: 'clients',
  title: 'nav.clients',
  allowed: (session) => session.kind === 'client' && session.scopes.includes('webhook:admin'),
  async render(main, { session }) {
    const zone = session.timezone;
    const { clients } = await api('GET', '/connect-auth/v1/account/clients');
    const state = (client) =>
      client.disabled_at !== null
        ? h('span', { class: 'badge bad' }, t('ops.client_revoked', { at: stampIn(zone, client.disabled_at) }))
        : client.previous_secret_expires_at !== null
          ? h('span', { class: 'badge wait' }, t('ops.client_grace', { until: stampIn(zone, client.previous_secret_expires_at) }))
          : h('span', { class: 'badge good' }, t('ops.client_active'));
    main.append(
      h('h1', { tabindex: '-1' }, t('clients.title', { business: session.business_name ?? session.business_id })),
      h('p', {}, t('clients.intro')),
      table({
        id: 'clients-table',
        columns: [
          {
            title: t('signin.client_id'),
            head: true,
            cell: (client) => [
              h('code', {}, client.client_id),
              client.client_id === session.client_id ? [' ', h('span', { class: 'badge' }, t('clients.yours'))] : null,
            ],
          },
          { title: t('ops.scopes'), cell: (client) => client.scopes.join(' ') },
          { title: t('ops.created'), cell: (client) => stampIn(zone, client.created_at) },
          { title: t('ops.state'), cell: state },
        ],
        rows: clients,
        rowProps: (client) => ({ 'data-client': client.client_id }),
      }),
    );
  },
};
