/** Helpers shared by the cases tests. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { App } from '../../../src/http/app-type.ts';
import { bearer } from '../../support.ts';

export const BASE = '/mr/api/v1/cases';

export interface CaseJson {
  id: string;
  status: string;
  updated_at: number;
  item?: Record<string, unknown>;
}

export interface PageJson {
  cases: CaseJson[];
  next_token: string | null;
}

/** Requests for one caller and one patient. */
export function casesApi(app: App, token: string, patient: string) {
  const headers = { ...bearer(token), 'x-pt-id': patient };
  return {
    list: (query: Record<string, string | number> = {}) => {
      const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)])).toString();
      return app.inject({ method: 'GET', url: `${BASE}${qs ? `?${qs}` : ''}`, headers });
    },
    create: (body: Record<string, unknown>) => app.inject({ method: 'POST', url: BASE, headers, payload: body }),
    get: (id: string) => app.inject({ method: 'GET', url: `${BASE}/${encodeURIComponent(id)}`, headers }),
    update: (id: string, body: unknown) =>
      app.inject({ method: 'PATCH', url: `${BASE}/${encodeURIComponent(id)}`, headers, payload: body as object }),
    remove: (id: string) => app.inject({ method: 'DELETE', url: `${BASE}/${encodeURIComponent(id)}`, headers }),
    /** Every page from `query` on, following next_token. */
    async all(query: Record<string, string | number> = {}): Promise<{ cases: CaseJson[]; pages: PageJson[] }> {
      const pages: PageJson[] = [];
      let offset: string | null = null;
      do {
        const response = await this.list(offset ? { ...query, offset } : query);
        if (response.statusCode !== 200) throw new Error(`list answered ${response.statusCode}: ${response.body}`);
        const page = response.json() as PageJson;
        pages.push(page);
        offset = page.next_token;
      } while (offset !== null);
      return { cases: pages.flatMap((page) => page.cases), pages };
    },
  };
}

/** Waits until the current second is over, so that everything written so far is listed. */
export async function untilSecondIsOver(): Promise<void> {
  await sleep(1000 - (Date.now() % 1000) + 25);
}

export function newCase(id: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id, display_name: `Case ${id}`, occurred_at: 1_700_000_000, ...extra };
}

/** True when (updated_at, id) ascends strictly along the list. */
export function isKeysetOrdered(cases: CaseJson[]): boolean {
  return cases.every(
    (c, i) => i === 0 || cases[i - 1]!.updated_at < c.updated_at || (cases[i - 1]!.updated_at === c.updated_at && cases[i - 1]!.id < c.id),
  );
}
