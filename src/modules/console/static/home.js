// Home: who is signed in, what the client may do, and the pages open to them.
import { h } from './dom.js';
import { t } from './strings.js';

export const homePage = {
  name: '',
  title: 'nav.home',
  allowed: () => true,
  render(main, { session }) {
    const who =
      session.kind === 'operator'
        ? t('home.operator')
        : t('home.client', { client: session.client_id, business: session.business_name ?? session.business_id });
    main.append(
      h('h1', { tabindex: '-1' }, t('home.title')),
      h('p', { id: 'who' }, who),
      session.kind === 'client'
        ? h('section', { 'aria-labelledby': 'scopes-title' }, h('h2', { id: 'scopes-title' }, t('home.scopes')), h('ul', { class: 'scopes' }, session.scopes.map((scope) => h('li', {}, h('code', {}, scope)))))
        : null,
      h('p', { class: 'muted' }, t('home.idle', { minutes: Math.round(session.idle_seconds / 60) })),
    );
  },
};
