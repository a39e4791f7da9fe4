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
      .then(function (res) { return res.json(); })
      .then(function (s) {
        // a new state, or a charge that ended without one (a refused card token): the server renders it
        if (s.status !== shown || (s.status === 'pending' && !s.charging)) reload();
      })
      .catch(function () { /* asked again at the next tick */ });
  }

  function poll() {
    if (timer) return;
    timer = setInterval(check, 1000);
    check();
  }

  if (state === '3ds-return') {
    // the issuer sent the challenge frame here: tell the checkout page (same origin) to ask the server
    if (window.parent !== window) window.parent.postMessage({ type: '3ds-done', payment: id }, location.origin);
    else location.replace(body.getAttribute('data-checkout'));
    return;
  }

  if (state === 'final') {
    var back = body.getAttribute('data-auto-return');
    if (back) setTimeout(function () { location.assign(back); }, 3000);
    return;
  }

  if (state === 'charging') poll();

  if (state === 'challenge') {
    var challenge = document.getElementById('challenge-frame');
    window.addEventListener('message', function (e) {
      if (e.origin !== location.origin || !challenge || e.source !== challenge.contentWindow) return;
      if (e.data && e.data.type === '3ds-done') check();
    });
    poll();
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
        .catch(function () { stop(messages.network); });
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
