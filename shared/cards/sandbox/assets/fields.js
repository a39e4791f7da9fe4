// The sandbox vault's card fields (framed by the checkout page). They talk to their parent only
// by postMessage, with its exact origin, and accept messages only from that origin and window.
(function () {
  'use strict';
  var body = document.body;
  var parentOrigin = body.getAttribute('data-parent-origin');
  var payment = body.getAttribute('data-payment');
  var messages = JSON.parse(body.getAttribute('data-messages'));
  var number = document.getElementById('cc-number');
  var exp = document.getElementById('cc-exp');
  var csc = document.getElementById('cc-csc');
  var error = document.getElementById('card-error');
  var fields = { 'card-invalid': number, 'expiry-invalid': exp, 'cvc-invalid': csc };
  var busy = false;

  function tell(message) {
    window.parent.postMessage(message, parentOrigin);
  }

  function clear() {
    error.textContent = '';
    [number, exp, csc].forEach(function (f) {
      f.removeAttribute('aria-invalid');
    });
  }

  function fail(code) {
    error.textContent = messages[code] || messages.network;
    var field = fields[code];
    if (field) {
      field.setAttribute('aria-invalid', 'true');
      field.focus();
    }
    tell({ type: 'error', code: code });
  }

  exp.addEventListener('input', function () {
    var digits = exp.value.replace(/\D/g, '').slice(0, 4);
    exp.value = digits.length > 2 ? digits.slice(0, 2) + '/' + digits.slice(2) : digits;
  });

  [number, exp, csc].forEach(function (f) {
    f.addEventListener('keydown', function (e) {
      // Enter in a card field pays, as it would in a one-page form
      if (e.key === 'Enter') {
        e.preventDefault();
        tell({ type: 'submit' });
      }
    });
  });

  function tokenize() {
    if (busy) return;
    busy = true;
    clear();
    fetch('/v1/tokens', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ number: number.value, exp: exp.value, cvc: csc.value, payment: payment }),
    })
      .then(function (res) {
        return res.json().then(function (b) {
          return { status: res.status, body: b };
        });
      })
      .then(function (r) {
        if (r.status === 201) {
          tell({
            type: 'token',
            token: r.body.token,
            brand: r.body.brand,
            last4: r.body.last4,
            exp_month: r.body.exp_month,
            exp_year: r.body.exp_year,
          });
        } else {
          fail(r.body && r.body.error ? r.body.error.code : 'network');
        }
      })
      .catch(function () {
        fail('network');
      })
      .then(function () {
        busy = false;
      });
  }

  window.addEventListener('message', function (e) {
    if (e.origin !== parentOrigin || e.source !== window.parent) return;
    var d = e.data;
    if (d && d.type === 'tokenize') tokenize();
  });

  tell({ type: 'ready', height: document.documentElement.scrollHeight });
})();
