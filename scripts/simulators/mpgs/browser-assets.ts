/**
 * The browser side of the Mastercard Gateway simulator (README.md in shared/providers/mpgs):
 * `session.js` (PaymentSession.configure / updateSessionFromForm, as the Hosted Session
 * reference describes them), the hosted-field page each iframe loads from the simulator's own
 * origin, and the 3-D Secure pages. The merchant page only ever exchanges postMessage events
 * without card data with the iframes; the iframes post the card fields to the simulator.
 */

const esc = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The field names of PaymentSession.configure({fields: {card: …}}) and the iframe's input kind. */
export const CARD_FIELDS = ['number', 'securityCode', 'expiryMonth', 'expiryYear', 'nameOnCard'] as const;
export type CardField = (typeof CARD_FIELDS)[number];

/**
 * session.js. configure({session, fields: {card: {number: '#sel', …}}, callbacks: {initialized,
 * formSessionUpdate}}) replaces each selected element by an iframe of the simulator;
 * updateSessionFromForm('card') asks each iframe to store its field, then the card-number
 * iframe to commit the session, and calls formSessionUpdate with status ok, fields_in_error
 * (errors per field), request_timeout (no answer within `timeoutMs`) or system_error.
 */
export function sessionJs(origin: string, version: string, merchantId: string, timeoutMs: number): string {
  const base = `${origin}/form/version/${version}/merchant/${encodeURIComponent(merchantId)}`;
  return `(function () {
  'use strict';
  var ORIGIN = ${JSON.stringify(origin)};
  var BASE = ${JSON.stringify(base)};
  var TIMEOUT_MS = ${timeoutMs};
  var config = null, frames = {}, ready = {}, initialised = false, pending = null;
  function callback(name, arg) {
    var cbs = (config && config.callbacks) || {};
    if (typeof cbs[name] === 'function') { try { cbs[name](arg); } catch (e) { setTimeout(function () { throw e; }); } }
  }
  function sessionId() { return config && config.session; }
  function finish(response) {
    if (!pending) return;
    clearTimeout(pending.timer);
    pending = null;
    response.session = response.session || { id: sessionId() };
    response.version = response.version || ${JSON.stringify(version)};
    callback('formSessionUpdate', response);
  }
  window.addEventListener('message', function (e) {
    if (e.origin !== ORIGIN) return;
    var d = e.data || {};
    if (d.type === 'mpgs-sim-ready' && frames[d.field] && e.source === frames[d.field].contentWindow) {
      ready[d.field] = true;
      var all = Object.keys(frames).every(function (f) { return ready[f]; });
      if (all && !initialised) { initialised = true; callback('initialized', { status: 'ok' }); }
      return;
    }
    if (!pending || d.nonce !== pending.nonce) return;
    if (d.type === 'mpgs-sim-stored') {
      delete pending.waiting[d.field];
      if (d.ok === false) return finish({ status: 'system_error', errors: { message: 'The field could not be stored.' } });
      if (Object.keys(pending.waiting).length === 0 && !pending.committing) {
        pending.committing = true;
        frames.number.contentWindow.postMessage({ type: 'mpgs-sim-commit', nonce: pending.nonce }, ORIGIN);
      }
    } else if (d.type === 'mpgs-sim-result') {
      finish(d.response || { status: 'system_error', errors: { message: 'No answer.' } });
    }
  });
  window.PaymentSession = {
    configure: function (configuration) {
      config = configuration || {};
      var card = (config.fields && config.fields.card) || {};
      if (!config.session || !card.number) { callback('initialized', { status: 'system_error', message: 'session and fields.card.number are required' }); return; }
      ${JSON.stringify(CARD_FIELDS)}.forEach(function (name) {
        var selector = card[name];
        if (!selector) return;
        var el = document.querySelector(selector);
        if (!el) return;
        var frame = document.createElement('iframe');
        frame.src = BASE + '/field?session=' + encodeURIComponent(config.session) + '&field=' + name;
        frame.title = name;
        frame.setAttribute('data-mpgs-field', name);
        frame.style.cssText = 'border:1px solid #bbb;border-radius:4px;width:100%;height:2.6em;display:block';
        el.style.display = 'none';
        el.setAttribute('readonly', 'readonly');
        el.parentNode.insertBefore(frame, el.nextSibling);
        frames[name] = frame;
      });
    },
    updateSessionFromForm: function (paymentType) {
      if (paymentType !== undefined && paymentType !== 'card') return finish({ status: 'system_error', errors: { message: 'Only card is supported.' } });
      if (pending || !config) return;
      var nonce = Math.random().toString(36).slice(2) + Date.now().toString(36);
      pending = { nonce: nonce, waiting: {}, committing: false };
      pending.timer = setTimeout(function () { finish({ status: 'request_timeout', errors: { message: 'Request timeout error message.' } }); }, TIMEOUT_MS);
      Object.keys(frames).forEach(function (f) {
        pending.waiting[f] = true;
        frames[f].contentWindow.postMessage({ type: 'mpgs-sim-store', nonce: nonce }, ORIGIN);
      });
    },
    setFocus: function (field) { if (frames[field]) frames[field].contentWindow.postMessage({ type: 'mpgs-sim-focus' }, ORIGIN); }
  };
})();
`;
}

const INPUT: Record<CardField, { label: string; attrs: string }> = {
  number: { label: 'Card number', attrs: 'inputmode="numeric" autocomplete="cc-number" maxlength="23"' },
  securityCode: { label: 'Security code', attrs: 'inputmode="numeric" autocomplete="cc-csc" maxlength="4"' },
  expiryMonth: { label: 'MM', attrs: 'inputmode="numeric" autocomplete="cc-exp-month" maxlength="2"' },
  expiryYear: { label: 'YY', attrs: 'inputmode="numeric" autocomplete="cc-exp-year" maxlength="4"' },
  nameOnCard: { label: 'Name on card', attrs: 'autocomplete="cc-name" maxlength="60"' },
};

/**
 * The page of one hosted field. It answers its parent only (e.source === parent): 'store' posts
 * the field's value to the simulator (same origin), 'commit' asks the simulator to check the
 * session's fields and relays the formSessionUpdate answer, which holds no card data.
 */
export function fieldPage(base: string, sessionId: string, field: CardField): string {
  const i = INPUT[field];
  return `<!doctype html><html><head><meta charset="utf-8"><title>${esc(i.label)}</title>
<style>html,body{margin:0;padding:0}input{box-sizing:border-box;width:100%;height:2.4em;border:0;padding:0 .5em;font:16px system-ui,sans-serif;outline:none}</style></head>
<body><input id="f" name="${field}" aria-label="${esc(i.label)}" placeholder="${esc(i.label)}" ${i.attrs}>
<script>
(function () {
  var SESSION = ${JSON.stringify(sessionId)}, FIELD = ${JSON.stringify(field)}, BASE = ${JSON.stringify(base)};
  var input = document.getElementById('f');
  function tell(msg) { parent.postMessage(msg, '*'); }
  function post(path, body) {
    return fetch(BASE + '/session/' + encodeURIComponent(SESSION) + path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) })
      .then(function (r) { return r.json(); });
  }
  window.addEventListener('message', function (e) {
    if (e.source !== parent) return;
    var d = e.data || {};
    if (d.type === 'mpgs-sim-store') {
      post('/field', { field: FIELD, value: input.value }).then(function () { tell({ type: 'mpgs-sim-stored', nonce: d.nonce, field: FIELD, ok: true }); },
        function () { tell({ type: 'mpgs-sim-stored', nonce: d.nonce, field: FIELD, ok: false }); });
    } else if (d.type === 'mpgs-sim-commit') {
      post('/commit', {}).then(function (response) { if (response && response.status) tell({ type: 'mpgs-sim-result', nonce: d.nonce, response: response }); },
        function () { tell({ type: 'mpgs-sim-result', nonce: d.nonce, response: { status: 'system_error', errors: { message: 'System error message.' } } }); });
    } else if (d.type === 'mpgs-sim-focus') { input.focus(); }
  });
  tell({ type: 'mpgs-sim-ready', field: FIELD });
})();
</script></body></html>`;
}

/** An HTML fragment whose form the browser submits at once (scripts run when the fragment is inserted as a document or executed by the integrator). */
function autoPost(id: string, action: string, fields: Record<string, string>, target: string): string {
  const inputs = Object.entries(fields)
    .map(([k, v]) => `<input type="hidden" name="${esc(k)}" value="${esc(v)}" />`)
    .join('');
  return `<form id="${id}" method="POST" action="${esc(action)}" target="${target}">${inputs}</form><script id="authenticate-payer-script">var e=document.getElementById("${id}");if(e){e.submit();if(e.parentNode!==null){e.parentNode.removeChild(e);}}</script>`;
}

/** authentication.redirect.html of a challenge: a form posting the token to the simulator's ACS page, inside a frame named challengeFrame. */
export function challengeRedirectHtml(origin: string, token: string): string {
  return `<div id="threedsChallengeRedirect" style="height: 100vh">${autoPost(
    'threedsChallengeRedirectForm',
    `${origin}/acs/challenge`,
    { creq: token },
    'challengeFrame',
  )}<iframe id="challengeFrame" name="challengeFrame" width="100%" height="100%"></iframe></div>`;
}

/** The fields the gateway posts to redirectResponseUrl when authentication ends (never trusted: re-read by a retrieve). */
export function returnFields(orderId: string, transactionId: string, result: string, recommendation: string) {
  return {
    'order.id': orderId,
    'transaction.id': transactionId,
    result,
    'response.gatewayRecommendation': recommendation,
  };
}

/** authentication.redirect.html when no challenge is needed: straight back to redirectResponseUrl. */
export function frictionlessRedirectHtml(redirectResponseUrl: string, fields: Record<string, string>): string {
  return `<div id="threedsFrictionLessRedirect">${autoPost('threedsFrictionLessRedirectForm', redirectResponseUrl, fields, '_self')}</div>`;
}

/** The simulated ACS challenge page (the simulator's origin): the client approves or fails. */
export function challengePage(token: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>3-D Secure (simulator)</title>
<style>body{font:16px system-ui,sans-serif;margin:1.5em}button{font-size:1em;padding:.6em 1.2em;margin:.4em}</style></head>
<body><h1>Simulated 3-D Secure challenge</h1><p>Mastercard Gateway simulator: choose the authentication result.</p>
<form method="POST" action="/acs/challenge/complete"><input type="hidden" name="creq" value="${esc(token)}">
<button type="submit" name="outcome" value="approve" id="approve">Authenticate</button>
<button type="submit" name="outcome" value="fail" id="fail">Fail authentication</button></form></body></html>`;
}

/** The page that returns the payer to redirectResponseUrl after the challenge (in the challenge frame, as the gateway does). */
export function returnPage(redirectResponseUrl: string, fields: Record<string, string>): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>Returning…</title></head><body>${autoPost(
    'threedsReturnForm',
    redirectResponseUrl,
    fields,
    '_self',
  )}</body></html>`;
}
