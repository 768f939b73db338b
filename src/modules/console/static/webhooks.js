// A partner's webhooks: subscriptions, each delivery's state, attempts, answers and timings, a retry,
// a replay window, one event's body as sent and how to verify its signature. The API's own calls.
import { api } from './api.js';
import { field, h, replace, requests, table } from './dom.js';
import { t } from './strings.js';
import { stampIn } from './time.js';

const BASE = '/notification/v1/connect/webhook/subscriptions';
const enc = encodeURIComponent;
const tone = { succeeded: 'good', failed: 'bad', pending: 'wait' };

const VERIFY = `// Node: check a delivery as received (raw body bytes, before any parsing)
import { createHmac, timingSafeEqual } from 'node:crypto';
function verify(rawBody, headers, signingKey) {
  const id = headers['webhook-id'], timestamp = headers['webhook-timestamp'];
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false; // too old: a replay
  const key = signingKey.startsWith('whsec_') ? Buffer.from(signingKey.slice(6), 'base64') : Buffer.from(signingKey, 'utf8');
  const expected = createHmac('sha256', key).update(\`\${id}.\${timestamp}.\${rawBody}\`).digest('base64');
  return headers['webhook-signature'].split(' ').some((part) => {
    const sent = Buffer.from(part.replace(/^v1,/, ''), 'base64');
    return sent.length === 32 && timingSafeEqual(sent, Buffer.from(expected, 'base64'));
  });
}`;

export const webhooksPage = {
  name: 'webhooks',
  title: 'nav.webhooks',
  allowed: (session) => session.kind === 'client' && session.scopes.includes('webhook:admin'),
  async render(main, { session, announce }) {
    const zone = session.timezone;
    const when = (seconds) => (seconds ? stampIn(zone, seconds * 1000) : '–');
    const listArea = h('section', { 'aria-labelledby': 'hooks-list-title' });
    const deliveryArea = h('section', { 'aria-labelledby': 'hooks-deliveries-title' });
    const eventArea = h('section', { 'aria-labelledby': 'hooks-event-title' });
    const createdArea = h('div', { role: 'status' });
    let current = null;

    const createError = h('p', { class: 'error', role: 'alert', hidden: true });
    const createForm = h(
      'form',
      {
        class: 'card',
        id: 'hooks-create',
        onsubmit: async (event) => {
          event.preventDefault();
          createError.hidden = true;
          const values = new FormData(createForm);
          const names = String(values.get('event_names'))
            .split(/[\s,]+/)
            .filter(Boolean);
          try {
            const created = await api('POST', BASE, { endpoint: values.get('endpoint'), event_names: names });
            replace(
              createdArea,
              h(
                'div',
                { class: 'card' },
                h('p', {}, t('hooks.created', { id: created.id })),
                h('p', { class: 'error' }, t('hooks.key_once')),
                h('pre', { id: 'hooks-key' }, created.signing_key),
              ),
            );
            createForm.reset();
            await loadList();
          } catch (failure) {
            createError.textContent = t('app.error', { message: failure.message });
            createError.hidden = false;
          }
        },
      },
      h('h2', {}, t('hooks.create')),
      field(t('hooks.endpoint'), { name: 'endpoint', type: 'url', required: true, id: 'hooks-endpoint', placeholder: 'https://example.com/webhooks' }),
      field(t('hooks.events'), { name: 'event_names', required: true, id: 'hooks-events', value: 'appointment.created appointment.statuschange' }),
      createError,
      h('button', { type: 'submit' }, t('hooks.create_button')),
    );

    main.append(h('h1', { tabindex: '-1' }, t('hooks.title')), listArea, createdArea, createForm, deliveryArea, eventArea);

    const listRequest = requests();
    async function loadList() {
      const isNewest = listRequest();
      const answer = await api('GET', BASE);
      if (!isNewest()) return;
      const subscriptions = answer.data ?? answer.subscriptions ?? answer;
      replace(
        listArea,
        h('h2', { id: 'hooks-list-title' }, t('hooks.subscriptions')),
        subscriptions.length === 0
          ? h('p', {}, t('hooks.none'))
          : table({
              id: 'hooks-table',
              columns: [
                { title: t('hooks.endpoint'), head: true, cell: (subscription) => h('code', {}, subscription.endpoint) },
                { title: t('hooks.events'), cell: (subscription) => subscription.event_names.join(', ') },
                { title: t('hooks.state'), cell: (subscription) => t(`hooks.status_${subscription.status}`) },
                {
                  title: t('desk.actions'),
                  bare: true,
                  cell: (subscription) =>
                    h(
                      'button',
                      {
                        type: 'button',
                        class: 'secondary',
                        'aria-label': t('hooks.deliveries_of', { endpoint: subscription.endpoint }),
                        onclick: () => loadDeliveries(subscription),
                      },
                      t('hooks.deliveries'),
                    ),
                },
              ],
              rows: subscriptions,
            }),
      );
    }

    const deliveriesRequest = requests();
    async function loadDeliveries(subscription) {
      const isNewest = deliveriesRequest();
      current = subscription;
      const { data } = await api('GET', `${BASE}/${enc(subscription.id)}/deliveries`);
      if (!isNewest()) return;
      const since = h('input', { id: 'replay-since', name: 'since', type: 'datetime-local', required: true });
      const replayError = h('p', { class: 'error', role: 'alert', hidden: true });
      replace(
        deliveryArea,
        h('h2', { id: 'hooks-deliveries-title', tabindex: '-1' }, t('hooks.deliveries_title', { endpoint: subscription.endpoint })),
        data.length === 0
          ? h('p', {}, t('hooks.no_deliveries'))
          : table({
              id: 'deliveries-table',
              columns: [
                { title: t('hooks.event'), head: true, cell: (delivery) => [delivery.event, h('br', {}), h('code', {}, delivery.event_id)] },
                {
                  title: t('hooks.state'),
                  cell: (delivery) => h('span', { class: `badge ${tone[delivery.status] ?? ''}` }, t(`hooks.delivery_${delivery.status}`)),
                },
                { title: t('hooks.attempts'), num: true, cell: (delivery) => delivery.attempts },
                { title: t('hooks.last_code'), cell: (delivery) => delivery.last_status_code ?? delivery.last_error ?? '–' },
                { title: t('hooks.next'), cell: (delivery) => when(delivery.next_attempt_at) },
                {
                  title: t('desk.actions'),
                  bare: true,
                  cell: (delivery) =>
                    h(
                      'div',
                      { class: 'actions' },
                      h('button', { type: 'button', class: 'secondary', 'aria-label': t('hooks.inspect_of', { id: delivery.event_id }), onclick: () => loadEvent(delivery.event_id) }, t('hooks.inspect')),
                      delivery.status === 'succeeded'
                        ? null
                        : h(
                            'button',
                            {
                              type: 'button',
                              'aria-label': t('hooks.retry_of', { id: delivery.event_id }),
                              onclick: async () => {
                                try {
                                  await api('POST', `${BASE}/${enc(subscription.id)}/deliveries/${enc(delivery.event_id)}/retry`);
                                  await loadDeliveries(subscription);
                                  announce(t('hooks.done_retry'));
                                } catch (failure) {
                                  announce(t('app.error', { message: failure.message }));
                                }
                              },
                            },
                            t('hooks.retry'),
                          ),
                    ),
                },
              ],
              rows: data,
            }),
        h(
          'form',
          {
            class: 'card inline',
            id: 'hooks-replay',
            onsubmit: async (event) => {
              event.preventDefault();
              replayError.hidden = true;
              try {
                const from = Math.floor(new Date(since.value).getTime() / 1000);
                const answer = await api('POST', `${BASE}/${enc(subscription.id)}/replay`, { since: from });
                await loadDeliveries(subscription);
                announce(t('hooks.done_replay', { count: answer.queued }));
              } catch (failure) {
                replayError.textContent = t('app.error', { message: failure.message });
                replayError.hidden = false;
              }
            },
          },
          h('div', { class: 'field' }, h('label', { for: 'replay-since' }, t('hooks.replay_since')), since),
          h('button', { type: 'submit' }, t('hooks.replay')),
          replayError,
        ),
      );
    }

    const eventRequest = requests();
    async function loadEvent(eventId) {
      const isNewest = eventRequest();
      const event = await api('GET', `/notification/v1/connect/webhook/events/${enc(eventId)}`);
      if (!isNewest()) return;
      const delivery = event.deliveries.find((d) => d.subscription_id === current?.id) ?? event.deliveries[0];
      replace(
        eventArea,
        h('h2', { id: 'hooks-event-title', tabindex: '-1' }, t('hooks.event_title', { name: event.event, id: event.id })),
        h('dl', { class: 'facts' }, h('dt', {}, t('hooks.created_at')), h('dd', {}, when(event.created_at)), h('dt', {}, t('hooks.ordering')), h('dd', {}, event.ordering_key ?? '–')),
        h('h3', {}, t('hooks.body')),
        h('pre', { id: 'event-body' }, JSON.stringify(event.body, null, 2)),
        delivery
          ? [
              h('h3', {}, t('hooks.attempt_history')),
              table({
                id: 'attempts-table',
                stack: false,
                columns: [
                  { title: t('hooks.attempt'), num: true, cell: (attempt) => attempt.attempt },
                  { title: t('hooks.started'), cell: (attempt) => when(attempt.started_at) },
                  { title: t('hooks.duration'), num: true, cell: (attempt) => t('hooks.ms', { ms: attempt.duration_ms }) },
                  { title: t('hooks.last_code'), cell: (attempt) => attempt.status_code ?? attempt.error ?? '–' },
                ],
                rows: delivery.attempt_history,
              }),
            ]
          : null,
        h('h3', {}, t('hooks.verify')),
        h('p', {}, t('hooks.verify_intro')),
        h('pre', { id: 'verify-code' }, VERIFY),
      );
      eventArea.querySelector('h2').focus();
    }

    await loadList();
  },
};
