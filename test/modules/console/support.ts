/** Shared by the console's tests: signing in through the console's routes and calling with the session. */
import assert from 'node:assert/strict';
import type { TestApp } from '../../support.ts';

export interface ConsoleSession {
  cookie: string;
  csrf: string;
  setCookie: string;
  view: Record<string, unknown>;
}

export async function signInClient(t: TestApp, clientId: string, clientSecret: string): Promise<ConsoleSession> {
  const response = await t.app.inject({
    method: 'POST',
    url: '/console/session/client',
    payload: { client_id: clientId, client_secret: clientSecret },
  });
  assert.equal(response.statusCode, 200, response.body);
  return sessionOf(response.headers['set-cookie'], response.json());
}

export async function signInOperator(t: TestApp, adminToken: string): Promise<ConsoleSession> {
  const response = await t.app.inject({ method: 'POST', url: '/console/session/operator', headers: { authorization: `Bearer ${adminToken}` } });
  assert.equal(response.statusCode, 200, response.body);
  return sessionOf(response.headers['set-cookie'], response.json());
}

function sessionOf(setCookie: unknown, view: Record<string, unknown>): ConsoleSession {
  assert.equal(typeof setCookie, 'string');
  const cookie = String(setCookie).split(';')[0]!;
  return { cookie, csrf: String(view.csrf_token), setCookie: String(setCookie), view };
}

/** A call authorised by the session's cookie, with its CSRF token unless `csrf` is false. */
export async function withSession(t: TestApp, session: ConsoleSession, method: string, url: string, payload?: unknown, csrf = true) {
  return t.app.inject({
    method: method as 'GET',
    url,
    headers: { cookie: session.cookie, ...(csrf ? { 'x-csrf-token': session.csrf } : {}) },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}

/* ---- In the browser ---- */

import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';

export const OUTPUT = path.resolve(import.meta.dirname, '../../../test-output/console');
export const PHONE: BrowserContextOptions = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
export const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 } };

const AXE = readFileSync(path.resolve(import.meta.dirname, '../../../node_modules/axe-core/axe.min.js'), 'utf8');

export interface ConsolePage {
  page: Page;
  /** CSP refusals, failed loads and page errors: a test ends asserting there were none. */
  problems: string[];
  close(): Promise<void>;
}

/** A page in a context of its own (its own cookies), recording every problem. */
export async function openConsole(browser: Browser, options: BrowserContextOptions): Promise<ConsolePage> {
  mkdirSync(OUTPUT, { recursive: true });
  const context = await browser.newContext(options);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' && !/status of 4\d\d/.test(message.text())) problems.push(message.text());
    else if (/Refused|Content Security Policy/i.test(message.text())) problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  return { page, problems, close: () => context.close() };
}

/** A full-page screenshot in test-output/console/, for a person to look at. */
export async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(OUTPUT, `${name}.png`), fullPage: true });
}

/**
 * axe-core's WCAG 2.1 A and AA rules over the page as it is now: none may fail. axe is evaluated through
 * the DevTools protocol (an inline script tag would be refused by the console's CSP, as it should be).
 */
export async function checkAccessibility(page: Page, what: string): Promise<void> {
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(AXE);
  const violations = await page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: {
          run(context: Document, options: object): Promise<{ violations: Array<{ id: string; help: string; nodes: Array<{ target: unknown }> }> }>;
        };
      }
    ).axe;
    const result = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
    return result.violations.map(
      (violation) => `${violation.id}: ${violation.help} (${violation.nodes.map((node) => JSON.stringify(node.target)).join(', ')})`,
    );
  });
  assert.deepEqual(violations, [], `WCAG 2.1 AA violations on ${what}`);
}

/** No sideways scrolling at this width: not the page's, nor a table's or a code block's within it. */
export async function checkFits(page: Page, width: number): Promise<void> {
  const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(scrollWidth <= width, `no horizontal scroll (${scrollWidth} > ${width})`);
  const scrolling = await page.evaluate(() =>
    [...document.querySelectorAll('.table-wrap, pre')]
      .filter((box) => box.scrollWidth > box.clientWidth + 1)
      .map((box) => box.querySelector('table')?.id || box.id || box.tagName),
  );
  assert.deepEqual(scrolling, [], 'no box scrolls sideways');
}

/** Signs in through the page's own form. */
export async function signInThroughPage(
  page: Page,
  base: string,
  how: { clientId: string; clientSecret: string } | { adminToken: string },
): Promise<void> {
  await page.goto(`${base}/console`);
  await page.locator('body[data-ready=true]').waitFor();
  if ('adminToken' in how) {
    await page.getByLabel('Admin token').fill(how.adminToken);
    await page.locator('form', { hasText: 'As the operator' }).getByRole('button', { name: 'Sign in' }).click();
  } else {
    await page.getByLabel('Client id').fill(how.clientId);
    await page.getByLabel('Client secret').fill(how.clientSecret);
    await page.locator('form', { hasText: 'With an API client' }).getByRole('button', { name: 'Sign in' }).click();
  }
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}
