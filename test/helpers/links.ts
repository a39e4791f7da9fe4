import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { ServiceClient } from '../../shared/client/signing';

/** The payment-link page as a browser without JavaScript uses it: GET the page, POST a form. */

export async function aLink(client: ServiceClient, over: Record<string, unknown> = {}) {
  // a metadata of its own: two identical signed bodies in one second would be a replay (docs/decisions.md#replayed-signed-requests)
  const res = await client.post('/v1/payment_links', {
    amount: 2_500,
    currency: 'USD',
    description: 'Robe wax',
    metadata: { order: randomUUID() },
    ...over,
  });
  expect(res.status, JSON.stringify(res.body)).to.equal(201);
  return res.body;
}

export interface PageAnswer {
  status: number;
  location: string | null;
  headers: Headers;
  html: string;
}

export async function getPage(url: string, headers: Record<string, string> = {}): Promise<PageAnswer> {
  const res = await fetch(url, { redirect: 'manual', headers });
  return { status: res.status, location: res.headers.get('location'), headers: res.headers, html: await res.text() };
}

/** The token of the page's form for `method`. */
export function formToken(html: string, method: 'mobile_money' | 'card'): string {
  const form =
    new RegExp(`<form id="${method === 'card' ? 'card' : 'mm'}-form"[\\s\\S]*?</form>`).exec(html)?.[0] ?? '';
  const token = /name="token" value="([^"]+)"/.exec(form)?.[1];
  if (!token) throw new Error(`no ${method} form on the page`);
  return token;
}

let clients = 0;
/** A client address of its own (the test files trust one proxy): the per-IP limit is tested on its own. */
export const anIp = () => `10.9.${Math.floor(++clients / 250) % 250}.${(clients % 250) + 1}`;

/** POST /pay/{id} as the page's form does (same origin, urlencoded), from a client IP of its own unless `headers` names one. */
export async function submit(
  baseUrl: string,
  linkId: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<PageAnswer> {
  const res = await fetch(`${baseUrl}/pay/${linkId}`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      Origin: new URL(baseUrl).origin,
      'X-Forwarded-For': anIp(),
      ...headers,
    },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: res.status, location: res.headers.get('location'), headers: res.headers, html: await res.text() };
}

/** Opens the link's page and pays by mobile money with `phone`; returns the answer to the POST. */
export async function payByPhone(
  baseUrl: string,
  linkId: string,
  phone: string,
  extra: Record<string, string> = {},
): Promise<PageAnswer> {
  const page = await getPage(`${baseUrl}/pay/${linkId}`);
  expect(page.status, page.html).to.equal(200);
  return submit(baseUrl, linkId, {
    token: formToken(page.html, 'mobile_money'),
    method: 'mobile_money',
    lang: 'en',
    phone,
    operator: '',
    ...extra,
  });
}
