// The hosted checkout's one script (no framework, no inline script: the page's CSP allows only
// this file). It asks the vault's card fields for a token by postMessage (exact origin), posts
// the token to /checkout/{id}/pay, then asks the server for the outcome: the browser's word is
// never the outcome. Messages are taken only from the expected origin and window.
(function () {
  'use strict';
  var body = document.body;
  var state = body.getAttribute('data-state');
  var id = body.getAttribute('data-payment');
  var lang = body.getAttribute('data-lang');
  var shown = body.getAttribute('data-status');
  var messages = JSON.parse(body.getAttribute('data-messages') || '{}');
  var notice = document.getElementById('pay-status');
  var timer = null;

  function say(text) {
    if (notice) notice.textContent = text || '';
  }

  function reload() {
    location.replace('/checkout/' + id + '?lang=' + lang + '&from=pay');
  }

  function check() {
    fetch('/checkout/' + id + '/status', { headers: { Accept: 'application/json' }, cache: 'no-store' })
      .then(function (res) {
        return res.json();
      })
      .then(function (s) {
        // a new state, or a charge that ended without one (a refused card token): the server renders it
        if (s.status !== shown || (s.status === 'pending' && !s.charging)) reload();
      })
      .catch(function () {
        /* asked again at the next tick */
      });
  }

  function poll() {
    if (timer) return;
    timer = setInterval(check, 1000);
    check();
  }

  // payment links (/pay/{id}): the operator from the number's prefix, shown and still changeable
  if (state === 'link-form') {
    var phone = document.getElementById('phone');
    var select = document.getElementById('operator');
    var shownOp = document.getElementById('operator-detected');
    var prefixes = JSON.parse(body.getAttribute('data-prefixes') || '{}');
    var names = JSON.parse(body.getAttribute('data-detected') || '{}');
    var closed = JSON.parse(body.getAttribute('data-closed') || '[]');
    var chosen = false;
    var detect = function () {
      var n = phone.value.replace(/[\s.\-()[\]]/g, '');
      var m = /^(?:\+243|00243|243|0)([0-9]{2})/.exec(n);
      var found = null;
      if (m) for (var op in prefixes) if (prefixes[op].indexOf(m[1]) >= 0) found = op;
      shownOp.textContent = found ? names[found] : '';
      if (found && !chosen && closed.indexOf(found) < 0) select.value = found;
    };
    if (phone && select && shownOp) {
      phone.addEventListener('input', detect);
      select.addEventListener('change', function () {
        chosen = select.value !== '';
      });
      detect();
    }
    // one submission per form: a second click waits for the first (the token would make it the same payment anyway)
    Array.prototype.forEach.call(document.querySelectorAll('form.method'), function (f) {
      f.addEventListener('submit', function (e) {
        if (f.getAttribute('data-sent')) {
          e.preventDefault();
          return;
        }
        f.setAttribute('data-sent', '1');
        var b = f.querySelector('button');
        if (b) b.setAttribute('aria-busy', 'true');
      });
    });
    return;
  }

  // a payment link's attempt: ask the status (same origin) and, when it changes, swap the page's <main> in place
  if (state === 'attempt-waiting') {
    var statusUrl = body.getAttribute('data-status-url');
    var tick = function () {
      fetch(statusUrl, { headers: { Accept: 'application/json' }, cache: 'no-store', credentials: 'omit' })
        .then(function (res) {
          return res.json();
        })
        .then(function (s) {
          if (s.status === shown) return setTimeout(tick, 1500);
          return fetch(location.pathname + location.search, { cache: 'no-store', credentials: 'omit' })
            .then(function (res) {
              return res.text();
            })
            .then(function (text) {
              var doc = new DOMParser().parseFromString(text, 'text/html');
              document.querySelector('main').innerHTML = doc.querySelector('main').innerHTML;
              document.title = doc.title;
              shown = doc.body.getAttribute('data-status');
              if (doc.body.getAttribute('data-state') === 'attempt-waiting') setTimeout(tick, 1500);
              else body.setAttribute('data-state', doc.body.getAttribute('data-state'));
            });
        })
        .catch(function () {
          setTimeout(tick, 3000);
        });
    };
    setTimeout(tick, 1000);
    return;
  }

  if (state === '3ds-return') {
    // the issuer sent the challenge frame here: tell the checkout page (same origin; the top window,
    // a gateway's challenge page being a frame of its own inside the checkout's) to ask the server
    if (window.top !== window) window.top.postMessage({ type: '3ds-done', payment: id }, location.origin);
    else location.replace(body.getAttribute('data-checkout'));
    return;
  }

  if (state === 'final') {
    var back = body.getAttribute('data-auto-return');
    if (back)
      setTimeout(function () {
        location.assign(back);
      }, 3000);
    return;
  }

  if (state === 'charging') poll();

  if (state === 'challenge') {
    var challenge = document.getElementById('challenge-frame');
    window.addEventListener('message', function (e) {
      // from our own 3ds-return page, framed (directly or inside a gateway's challenge page) by this one
      if (e.origin !== location.origin || !challenge || !e.data || e.data.payment !== id) return;
      if (e.data.type === '3ds-done') check();
    });
    poll();
  }

  // a gateway's hosted session (docs/decisions.md#cards-hosted-checkout): its session.js turns the
  // page's card fields into iframes of its own origin and stores them in the session; the page
  // posts only the session id, with what 3-D Secure needs of the browser. The card number and
  // security code never pass through this page.
  if (state === 'hosted-session') {
    var sessionId = body.getAttribute('data-session');
    var hsForm = document.getElementById('pay-form');
    var hsButton = document.getElementById('pay-button');
    var hsPaying = false;
    var gateway = window.PaymentSession;

    var hsStop = function (text) {
      hsPaying = false;
      hsButton.disabled = false;
      hsButton.removeAttribute('aria-busy');
      say(text);
    };

    var browser = function () {
      return {
        acceptHeaders: body.getAttribute('data-accept') || '',
        colorDepth: (screen && screen.colorDepth) || 24,
        javaEnabled: false,
        language: navigator.language || lang,
        screenHeight: (screen && screen.height) || 0,
        screenWidth: (screen && screen.width) || 0,
        timeZone: new Date().getTimezoneOffset(),
      };
    };

    var hsPay = function () {
      fetch('/checkout/' + id + '/pay', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ session: sessionId, browser: browser() }),
      })
        .then(function (res) {
          if (res.status === 202) return poll();
          if (res.status === 409) return reload();
          hsStop(res.status === 429 ? messages.busy : messages.network);
        })
        .catch(function () {
          hsStop(messages.network);
        });
    };

    // fields_in_error: which fields, in the client's words; the client corrects them and pays again
    var fieldErrors = function (errors) {
      var out = [];
      if (errors.cardNumber) out.push(messages['field-cardNumber']);
      if (errors.expiryMonth || errors.expiryYear) out.push(messages['field-expiry']);
      if (errors.securityCode) out.push(messages['field-securityCode']);
      return out.length ? out.join(' ') : messages.card;
    };

    if (!gateway || typeof gateway.configure !== 'function') {
      hsButton.disabled = true;
      say(messages['fields-unavailable']);
      return;
    }
    gateway.configure({
      session: sessionId,
      fields: {
        card: {
          number: '#card-number',
          securityCode: '#card-security-code',
          expiryMonth: '#card-expiry-month',
          expiryYear: '#card-expiry-year',
        },
      },
      frameEmbeddingMitigation: ['javascript'],
      callbacks: {
        initialized: function (r) {
          if (!r || r.status !== 'ok') {
            hsButton.disabled = true;
            say(messages['fields-unavailable']);
          }
        },
        formSessionUpdate: function (r) {
          if (!hsPaying) return;
          var status = r && r.status;
          if (status === 'ok') return hsPay();
          if (status === 'fields_in_error') return hsStop(fieldErrors((r && r.errors) || {}));
          if (status === 'request_timeout') return hsStop(messages['request-timeout']);
          hsStop(messages['system-error']);
        },
      },
      interaction: { displayControl: { formatCard: 'EMBOSSED', invalidFieldCharacters: 'REJECT' } },
    });

    hsForm.addEventListener('submit', function (e) {
      e.preventDefault();
      if (hsPaying) return;
      hsPaying = true;
      hsButton.disabled = true;
      hsButton.setAttribute('aria-busy', 'true');
      say(messages.processing);
      gateway.updateSessionFromForm('card');
    });
  }

  if (state === 'form') {
    var vaultOrigin = body.getAttribute('data-vault-origin');
    var frame = document.getElementById('card-frame');
    var form = document.getElementById('pay-form');
    var button = document.getElementById('pay-button');
    var paying = false;

    var stop = function (text) {
      paying = false;
      button.disabled = false;
      button.removeAttribute('aria-busy');
      say(text);
    };

    var start = function (e) {
      if (e) e.preventDefault();
      if (paying) return;
      paying = true;
      button.disabled = true;
      button.setAttribute('aria-busy', 'true');
      say(messages.processing);
      frame.contentWindow.postMessage({ type: 'tokenize' }, vaultOrigin);
    };

    var pay = function (token) {
      fetch('/checkout/' + id + '/pay', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ token: token }),
      })
        .then(function (res) {
          if (res.status === 202) return poll();
          if (res.status === 409) return reload();
          stop(res.status === 429 ? messages.busy : messages.network);
        })
        .catch(function () {
          stop(messages.network);
        });
    };

    form.addEventListener('submit', start);
    window.addEventListener('message', function (e) {
      if (e.origin !== vaultOrigin || e.source !== frame.contentWindow) return;
      var d = e.data || {};
      if (d.type === 'ready' && d.height > 0 && d.height < 2000) frame.style.height = d.height + 'px';
      else if (d.type === 'submit') start();
      else if (d.type === 'error' && paying) stop(messages.card);
      else if (d.type === 'token' && paying && typeof d.token === 'string') pay(d.token);
    });
  }
})();
