// The console's page: who is signed in, the pages they may see, and the router between them.
// Every page lives at /console/<name>; the server answers each with this same page.
import { api, onSignedOut, setCsrf } from './api.js';
import { clientsPage } from './clients.js';
import { deskPage } from './desk.js';
import { h } from './dom.js';
import { homePage } from './home.js';
import { auditPage, businessesPage, healthPage } from './operator.js';
import { schedulePage } from './schedule.js';
import { searchPage } from './search.js';
import { signInPage } from './signin.js';
import { webhooksPage } from './webhooks.js';
import { t } from './strings.js';

/** The pages after sign-in, in the order of the menu; `allowed` reads the session. */
const PAGES = [homePage, deskPage, schedulePage, webhooksPage, clientsPage, searchPage, businessesPage, auditPage, healthPage];

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const statusLine = document.getElementById('status');
let session = null;

/** A short message read out by screen readers (role=status). */
export function announce(message) {
  statusLine.textContent = message;
}

function pageAt(pathname) {
  const name = pathname.replace(/^\/console\/?/, '').split('/')[0] ?? '';
  return PAGES.find((page) => page.name === name && page.allowed(session)) ?? null;
}

async function show(pathname, { focus = true } = {}) {
  if (!session) {
    renderNav();
    signInPage.render(main, { signedIn });
    document.title = `${t('signin.title')} · ${t('app.title')}`;
    return;
  }
  renderNav(pathname);
  const page = pageAt(pathname);
  // Each page draws into its own view: a page still waiting for an answer when another is shown draws into a view
  // no longer on screen.
  const view = h('div', {});
  main.replaceChildren(view);
  if (!page) {
    view.append(h('h1', { tabindex: '-1' }, t('notfound.title')), h('p', {}, t('notfound.body')));
  } else {
    document.title = `${t(page.title)} · ${t('app.title')}`;
    try {
      await page.render(view, { session, navigate, announce, path: pathname });
    } catch (error) {
      view.append(h('p', { class: 'error', role: 'alert' }, t('app.error', { message: error.message })));
    }
  }
  if (focus && view.isConnected) view.querySelector('h1')?.focus();
}

function renderNav(pathname = '') {
  nav.replaceChildren();
  if (!session) return;
  const current = pageAt(pathname);
  const list = h('ul', {});
  for (const page of PAGES.filter((p) => p.allowed(session))) {
    const href = page.name === '' ? '/console' : `/console/${page.name}`;
    list.append(h('li', {}, h('a', { href, 'aria-current': page === current ? 'page' : null }, t(page.title))));
  }
  list.append(h('li', {}, h('button', { type: 'button', class: 'link', onclick: signOut }, t('nav.signout'))));
  nav.append(list);
}

export function navigate(pathname) {
  history.pushState(null, '', pathname);
  return show(pathname);
}

function signedIn(view) {
  session = view;
  setCsrf(view.csrf_token);
  return navigate(location.pathname.startsWith('/console') ? location.pathname : '/console');
}

async function signOut() {
  try {
    await api('DELETE', '/console/session');
  } finally {
    ended(t('signout.done'));
  }
}

function ended(message) {
  session = null;
  setCsrf(null);
  announce(message);
  void show(location.pathname);
}

onSignedOut(() => ended(t('app.ended')));

// Links inside the console move without reloading the page.
document.addEventListener('click', (event) => {
  const link = event.target instanceof Element ? event.target.closest('a[href^="/console"]') : null;
  if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  event.preventDefault();
  void navigate(link.getAttribute('href'));
});
window.addEventListener('popstate', () => void show(location.pathname));

try {
  session = await api('GET', '/console/session');
  setCsrf(session.csrf_token);
} catch {
  session = null;
}
await show(location.pathname, { focus: false });
document.body.dataset.ready = 'true';
