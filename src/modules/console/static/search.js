// The search as partners' apps get it: the ranked answer, why each ranked (the fields the query matched,
// an exact name), and the look-alike/sound-alike warning. The API's own call.
import { api, ApiError } from './api.js';
import { field, h, replace, requests } from './dom.js';
import { t } from './strings.js';

/** A highlighted value (matched parts in <em>, the rest HTML-escaped) as text with <mark>s, never parsed as markup. */
function highlighted(value) {
  const parts = [];
  const unescape = (text) => {
    const area = document.createElement('textarea');
    area.innerHTML = text; // a textarea's content is text: entities decode, no element is made
    return area.value;
  };
  value.split(/(<em>.*?<\/em>)/).forEach((part) => {
    if (part.startsWith('<em>')) parts.push(h('mark', {}, unescape(part.slice(4, -5))));
    else if (part) parts.push(unescape(part));
  });
  return parts;
}

export const searchPage = {
  name: 'search',
  title: 'nav.search',
  allowed: (session) => session.kind === 'client' && session.scopes.includes('search'),
  async render(main) {
    const results = h('section', { 'aria-live': 'polite', id: 'search-results' });
    const searchRequest = requests();
    const form = h(
      'form',
      {
        class: 'card inline',
        role: 'search',
        onsubmit: async (event) => {
          event.preventDefault();
          const values = new FormData(form);
          const query = new URLSearchParams({ q: String(values.get('q')), s_type: String(values.get('s_type')), limit: '10' });
          const isNewest = searchRequest();
          try {
            const answer = await api('GET', `/medical-db/v1/drugs-and-labs?${query}`);
            if (isNewest()) show(answer);
          } catch (failure) {
            if (!isNewest()) return;
            if (failure instanceof ApiError && failure.status === 404) replace(results, h('p', {}, t('search.none')));
            else replace(results, h('p', { class: 'error', role: 'alert' }, t('app.error', { message: failure.message })));
          }
        },
      },
      field(t('search.query'), { name: 'q', type: 'search', required: true, maxlength: 200, id: 'search-q', autocomplete: 'off' }),
      h(
        'div',
        { class: 'field' },
        h('label', { for: 'search-type' }, t('search.type')),
        h('select', { id: 'search-type', name: 's_type' }, h('option', { value: 'drug' }, t('search.drugs')), h('option', { value: 'lab' }, t('search.labs'))),
      ),
      h('button', { type: 'submit' }, t('search.submit')),
    );
    main.append(h('h1', { tabindex: '-1' }, t('search.title')), form, results);

    function show(answer) {
      const rows = [
        ...answer.drugs.map((drug, index) => {
          const fields = drug.highlighted_fields ?? {};
          const matched = Object.keys(fields).filter((key) => key !== 'look_alike');
          return h(
            'li',
            { class: 'card' },
            h('h2', {}, `${index + 1}. `, fields.name ? highlighted(fields.name) : drug.name),
            h('p', {}, fields.generic_name ? highlighted(fields.generic_name) : drug.generic_name, ' · ', drug.manufacturer_name),
            h(
              'p',
              { class: 'muted' },
              t('search.why', { fields: matched.length > 0 ? matched.join(', ') : t('search.fuzzy') }),
              drug.drug_name_match ? ` ${t('search.exact')}` : '',
            ),
            fields.look_alike ? h('p', { class: 'error' }, t('search.look_alike', { warning: fields.look_alike })) : null,
          );
        }),
        ...answer.lab_tests.map((lab, index) => h('li', { class: 'card' }, h('h2', {}, `${index + 1}. ${lab.name}`), lab.category ? h('p', { class: 'muted' }, lab.category) : null)),
      ];
      replace(results, h('p', {}, t('search.count', { count: rows.length })), h('ol', { class: 'plain' }, rows));
    }
  },
};
