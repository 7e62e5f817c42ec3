// The console's one way to the cluster: the public REST API of the node
// that served the page, with the signed-in user's HTTP Basic credentials.
//
// The credentials live in this module's memory only: never in cookies
// or web storage. They are gone when the tab is closed or
// reloaded, and signOut drops them at once. Requests are sent with
// credentials: 'omit', so the browser neither adds credentials of its own
// nor shows its sign-in dialog on a 401: the page's form is the one way in.
//
// But for a node whose REST port requires a client certificate
// (--client-cert-auth): fetch presents the browser's certificate only
// with credentials, and the node refuses a connection without one. The
// console then asks with the browser's credentials (useCertificate), and
// the certificate's common name is the user.

let authorization = null; // "Basic ..." while signed in
let userName = '';
let credentials = 'omit'; // 'same-origin' once the node wanted a certificate
let certificateCN = null; // the node's Kvnode-Client-Certificate-CN, once it sent one
const listeners = new Set();

// useCertificate makes every request carry the browser's credentials,
// its client certificate among them (or, with false, no longer).
export function useCertificate(on = true) {
  credentials = on ? 'same-origin' : 'omit';
}

// byCertificate reports whether requests carry the browser's
// credentials.
export function byCertificate() {
  return credentials !== 'omit';
}

// certificateName is the common name of the browser's client certificate
// as the node saw it (it says so under --client-cert-auth), or null.
export function certificateName() {
  return certificateCN;
}

export class ApiError extends Error {
  constructor(fields) {
    super(fields.cause);
    Object.assign(this, fields);
  }
}

export function signIn(user, password) {
  const bytes = new TextEncoder().encode(`${user}:${password}`);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  authorization = 'Basic ' + btoa(bin);
  userName = user;
}

export function signOut() {
  authorization = null;
  userName = '';
}

export function user() {
  return userName;
}

// onUnauthorized registers f, called when a signed-in request answers
// 401 (the password changed, the user was removed).
export function onUnauthorized(f) {
  listeners.add(f);
}

// path joins segments with each one escaped, for keys like "a/b" or "100%".
export function seg(s) {
  return encodeURIComponent(s);
}

// call sends one request. opts: query (object of parameters; undefined
// values are left out), json (a value to send as JSON), body (a string
// sent as JSON text as it is), auth (false for a request without
// credentials). It resolves with {status, headers, text} for a 2xx or a
// 409 (whose body is the current value, not an error), and rejects with
// an ApiError carrying the API's cause otherwise.
export async function call(method, path, opts = {}) {
  let url = path;
  if (opts.query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.query)) if (v !== undefined && v !== null && v !== '') q.append(k, v);
    const s = q.toString();
    if (s) url += (url.includes('?') ? '&' : '?') + s;
  }
  const headers = { Accept: 'application/json' };
  let body;
  if (opts.json !== undefined) {
    body = JSON.stringify(opts.json);
  } else if (opts.body !== undefined) {
    body = opts.body;
  }
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const sentAuth = opts.auth !== false && authorization;
  if (sentAuth) headers.Authorization = authorization;
  let resp;
  try {
    resp = await fetch(url, { method, headers, body, credentials, cache: 'no-store', redirect: 'follow' });
  } catch (e) {
    throw new ApiError({ network: true, status: 0, method, path: url, cause: `the node did not answer (${e.message})` });
  }
  if (resp.headers.has('Kvnode-Client-Certificate-CN')) certificateCN = resp.headers.get('Kvnode-Client-Certificate-CN');
  const text = method === 'HEAD' ? '' : await resp.text();
  if (resp.ok || resp.status === 409 && opts.conflictOK) {
    return { status: resp.status, headers: resp.headers, text };
  }
  let cause = text;
  try {
    const v = JSON.parse(text);
    if (v && typeof v.cause === 'string') cause = v.cause;
  } catch (_) { /* not JSON: the text itself */ }
  if (!cause) cause = resp.statusText || `HTTP ${resp.status}`;
  const err = new ApiError({
    status: resp.status, method, path: url, cause, body: text,
    requestId: resp.headers.get('X-Request-ID'), retryAfter: resp.headers.get('Retry-After'),
  });
  if (resp.status === 401 && sentAuth) for (const f of listeners) f(err);
  throw err;
}

// getJSON is call for a JSON answer, parsed (numbers as JavaScript
// numbers: use json.js's parse where values must stay exact).
export async function getJSON(path, query) {
  const r = await call('GET', path, { query });
  return r.text ? JSON.parse(r.text) : null;
}

// openStream starts a Server-Sent Events answer (GET /kv/v1/watch) with
// the user's credentials, which a browser's EventSource cannot send (it
// sets no headers): so the console reads the stream with fetch, and
// resumes it itself with Last-Event-ID. It resolves with the Response
// once the stream has started, and rejects with an ApiError as call does.
export async function openStream(path, query, lastEventId, signal) {
  const url = path + '?' + new URLSearchParams(query).toString();
  const headers = { Accept: 'text/event-stream, application/json' };
  if (authorization) headers.Authorization = authorization;
  if (lastEventId) headers['Last-Event-ID'] = lastEventId;
  let resp;
  try {
    resp = await fetch(url, { headers, signal, credentials, cache: 'no-store' });
  } catch (e) {
    if (signal && signal.aborted) throw e;
    throw new ApiError({ network: true, status: 0, method: 'GET', path: url, cause: `the node did not answer (${e.message})` });
  }
  if (resp.ok) return resp;
  const text = await resp.text();
  let cause = text;
  let body = {};
  try { body = JSON.parse(text); if (typeof body.cause === 'string') cause = body.cause; } catch (_) { /* not JSON */ }
  const err = new ApiError({ status: resp.status, method: 'GET', path: url, cause: cause || `HTTP ${resp.status}`, body: text,
    oldestToken: body.oldestToken, retryAfter: resp.headers.get('Retry-After') });
  if (resp.status === 401 && authorization) for (const f of listeners) f(err);
  throw err;
}

// readEvents reads a Server-Sent Events body, calling onEvent({type,
// data, id}) per event and onId(id) whenever the last event ID changes
// (a keep-alive's id without data too). Lines end in CRLF, LF or CR;
// comments are skipped; data lines join with "\n". It resolves when the
// stream ends.
export async function readEvents(body, onEvent, onId) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let type = '';
  let data = [];
  let idBuf = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (!done) buf += value;
    // A CR at the end of what came may be half of a CRLF: wait for more,
    // unless the stream has ended.
    const eol = done ? /\r\n|\r|\n/ : /\r\n|\r(?=[^\n])|\n/;
    let m;
    while ((m = eol.exec(buf)) !== null) {
      const line = buf.slice(0, m.index);
      buf = buf.slice(m.index + m[0].length);
      if (line === '') {
        if (idBuf !== null) onId(idBuf);
        if (data.length) onEvent({ type: type || 'message', data: data.join('\n'), id: idBuf });
        type = '';
        data = [];
        continue;
      }
      if (line[0] === ':') continue;
      const i = line.indexOf(':');
      const field = i < 0 ? line : line.slice(0, i);
      const val = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
      if (field === 'event') type = val;
      else if (field === 'data') data.push(val);
      else if (field === 'id' && !val.includes('\0')) idBuf = val;
    }
    if (done) return;
  }
}
