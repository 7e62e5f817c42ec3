// DOM helpers. Text from the cluster (keys, values, causes) only ever
// becomes text nodes or attribute values, never markup.

// h builds an element: h('button.primary#run', {onclick, title}, 'Run').
export function h(spec, attrs, ...children) {
  const parts = spec.match(/^[a-z0-9]*|[.#][^.#]+/g);
  const el = document.createElement(parts[0] || 'div');
  const classes = [];
  for (const p of parts.slice(1)) {
    if (p[0] === '#') el.id = p.slice(1);
    else classes.push(p.slice(1));
  }
  if (classes.length) el.className = classes.join(' ');
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = [el.className, v].filter(Boolean).join(' ');
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'value') el.value = v;
    else if (k === 'checked' || k === 'disabled' || k === 'selected') el[k] = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// clear empties el and fills it with children.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function fmtInt(n) {
  return typeof n === 'number' ? n.toLocaleString('en-US') : '—';
}

export function fmtTime(d) {
  return d.toLocaleTimeString('en-GB', { hour12: false });
}

// toast shows a short message in the corner for a few seconds.
export function toast(msg, kind = '') {
  const box = document.getElementById('toasts');
  const t = h('div.toast', { class: kind, role: 'status' }, msg);
  box.append(t);
  while (box.children.length > 3) box.firstChild.remove();
  setTimeout(() => t.remove(), kind === 'error' ? 6000 : 2500);
}

const statusTitles = {
  400: 'Bad request', 401: 'Not signed in', 403: 'Forbidden', 404: 'Not found',
  405: 'Not allowed', 409: 'Conflict', 413: 'Too large', 414: 'URL too long', 415: 'Unsupported media type',
  429: 'Too many failed sign-ins', 500: 'Server error', 503: 'Unavailable',
};

// errorBox shows an API error: what kind (from the status), the API's
// cause, and the request it answered with its request ID, so that it can
// be found in the node's log.
export function errorBox(err) {
  if (!err || !err.status) {
    return h('div.alert.error', { role: 'alert' },
      h('div.title', err && err.network ? 'Cannot reach the node' : 'Error'),
      h('div.cause', err ? err.message : 'unknown error'));
  }
  const title = `${statusTitles[err.status] || 'HTTP ' + err.status}`;
  const meta = [`${err.status} · ${err.method} ${err.path}`];
  if (err.retryAfter) meta.push(`retry after ${err.retryAfter} s`);
  if (err.requestId) meta.push(`request ${err.requestId}`);
  return h('div.alert.error', { role: 'alert', dataset: { status: String(err.status) } },
    h('div.title', title),
    h('div.cause', err.cause),
    h('div.meta', meta.join(' · ')));
}

// showError replaces the content of slot with err's box (or empties it).
export function showError(slot, err) {
  fill(slot, err ? errorBox(err) : null);
}

// modal opens a dialog; it resolves with what the caller passes to close,
// or null when dismissed.
export function modal(title, body, buttons, opts = {}) {
  return new Promise((resolve) => {
    const prev = document.activeElement;
    const done = (v) => {
      document.removeEventListener('keydown', onKey);
      back.remove();
      if (prev && prev.focus) prev.focus();
      resolve(v);
    };
    const onKey = (e) => { if (e.key === 'Escape') done(null); };
    const foot = h('div.foot');
    const dialog = h('div.modal', { class: opts.wide ? 'wide' : '', role: 'dialog', 'aria-modal': 'true', 'aria-label': title },
      h('div.head', h('h2', title)), h('div.body', body), foot);
    const back = h('div.backdrop', { onmousedown: (e) => { if (e.target === back) done(null); } }, dialog);
    for (const b of buttons(done)) foot.append(b);
    document.addEventListener('keydown', onKey);
    document.body.append(back);
    const first = dialog.querySelector('input, textarea, select') || foot.lastChild;
    if (first) first.focus();
  });
}

// confirmDanger asks before a destructive action.
export function confirmDanger(title, text, action) {
  return modal(title, h('p', text), (done) => [
    h('button', { onclick: () => done(false) }, 'Cancel'),
    h('button.danger.solid', { onclick: () => done(true) }, action),
  ]);
}

// spinner is a small busy indicator.
export function spinner() {
  return h('span.spinner', { 'aria-label': 'loading' });
}

// busy disables button while promise runs.
export async function busy(button, promise) {
  button.disabled = true;
  try {
    return await promise;
  } finally {
    button.disabled = false;
  }
}

export function empty(title, text) {
  return h('div.empty', h('b', title), text);
}
