// Builds elements from data: text goes in as text, never as markup, so nothing the API returns can
// become markup or script.

/** h('p', { class: 'x' }, 'text', child): an element; `on<event>` props are listeners. */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') element.addEventListener(key.slice(2), value);
    else if (key === 'class') element.className = value;
    else if (key === 'value') element.value = value;
    else element.setAttribute(key, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

/** Replaces the children of `parent` (arrays flattened, empty values skipped, as in h()). */
export function replace(parent, ...children) {
  parent.replaceChildren();
  append(parent, children);
}

function append(parent, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else parent.append(child instanceof Node ? child : String(child));
  }
}

/**
 * For an area the user can ask to fill again before the last answer came: each call starts a request and
 * returns `isNewest`, false once a later request has started, so that a slow earlier answer never paints over
 * a later one.
 */
export function requests() {
  let newest = 0;
  return () => {
    const request = ++newest;
    return () => request === newest;
  };
}

let fieldCount = 0;
/** A labelled input: label and input joined by a fresh id. */
export function field(label, props = {}) {
  const id = props.id ?? `f${++fieldCount}`;
  return h('div', { class: 'field' }, h('label', { for: id }, label), h(props.tag ?? 'input', { ...props, tag: null, id }));
}

/**
 * A table of records in its scrolling wrapper. Each column has its `title`, its `cell` (the content for a record), and
 * how it is drawn: `head` (the row's header), `num` (a figure), `bare` (no label on a phone). A `stack` table reads
 * row by row on a phone, each cell labelled with its column's title.
 */
export function table({ id, caption, labelledBy, stack = true, columns, rows, rowProps }) {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: stack ? 'stack' : null, id, 'aria-labelledby': labelledBy },
      caption ? h('caption', {}, caption) : null,
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          columns.map((column) => h('th', { scope: 'col' }, column.title)),
        ),
      ),
      h('tbody', {}, tableRows({ stack, columns, rows, rowProps })),
    ),
  );
}

/** The rows of a table() for these records (to add to its body). */
export function tableRows({ stack = true, columns, rows, rowProps = () => ({}) }) {
  return rows.map((row) =>
    h(
      'tr',
      rowProps(row),
      columns.map((column) =>
        h(
          column.head ? 'th' : 'td',
          { scope: column.head ? 'row' : null, class: column.num ? 'num' : null, 'data-label': stack && !column.bare ? column.title : null },
          column.cell(row),
        ),
      ),
    ),
  );
}
