// Sign-in: an API client's id and secret (front desks, partners' developers), or the admin token
// (operators), exchanged for a session cookie. Neither is kept by the page.
import { api } from './api.js';
import { field, h } from './dom.js';
import { t } from './strings.js';

function form(title, fields, submit) {
  const error = h('p', { class: 'error', role: 'alert', hidden: true });
  const element = h(
    'form',
    {
      class: 'card',
      onsubmit: async (event) => {
        event.preventDefault();
        const data = Object.fromEntries(new FormData(element));
        error.hidden = true;
        try {
          await submit(data);
        } catch (failure) {
          error.textContent = t('signin.failed', { message: failure.message });
          error.hidden = false;
        }
      },
    },
    h('h2', {}, title),
    fields,
    error,
    h('button', { type: 'submit' }, t('signin.submit')),
  );
  return element;
}

export const signInPage = {
  render(main, { signedIn }) {
    main.replaceChildren(
      h('h1', { tabindex: '-1' }, t('signin.title')),
      h('p', {}, t('signin.intro')),
      h(
        'div',
        { class: 'columns' },
        form(
          t('signin.client'),
          [
            field(t('signin.client_id'), { name: 'client_id', autocomplete: 'username', required: true, maxlength: 200, spellcheck: 'false' }),
            field(t('signin.client_secret'), { name: 'client_secret', type: 'password', autocomplete: 'current-password', required: true, maxlength: 500 }),
          ],
          async (data) => signedIn(await api('POST', '/console/session/client', data)),
        ),
        form(
          t('signin.operator'),
          [field(t('signin.admin_token'), { name: 'admin_token', type: 'password', autocomplete: 'current-password', required: true, maxlength: 500 })],
          async (data) => signedIn(await api('POST', '/console/session/operator', undefined, { authorization: `Bearer ${data.admin_token}` })),
        ),
      ),
    );
  },
};
