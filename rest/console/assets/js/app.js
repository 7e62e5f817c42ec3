// The console's shell: sign-in, the top bar, the navigation and the
// router (#/overview, #/partitions, #/regions, #/data/{region}, #/query,
// #/functions, #/watch/{region}).

import * as api from './api.js';
import { h, fill, errorBox, toast } from './dom.js';
import * as status from './status.js';
import * as overview from './views/overview.js';
import * as partitions from './views/partitions.js';
import * as regions from './views/regions.js';
import * as data from './views/data.js';
import * as query from './views/query.js';
import * as functions from './views/functions.js';
import * as watch from './views/watch.js';

const views = {
  overview: { title: 'Overview', icon: '◉', view: overview },
  partitions: { title: 'Partitions', icon: '⇄', view: partitions },
  regions: { title: 'Regions', icon: '▤', view: regions },
  data: { title: 'Data browser', icon: '⊞', view: data },
  query: { title: 'Query', icon: '❯', view: query },
  functions: { title: 'Functions', icon: 'ƒ', view: functions },
  watch: { title: 'Watch', icon: '◌', view: watch },
};

const root = document.getElementById('app');
let securityOn = false;
let unmount = null;
let shell = null;
let unsubscribe = null;

// start finds out whether the cluster wants credentials: GET /kv/v1
// without any answers 401 when security is on. Nothing of the cluster is
// shown before the API has accepted the user's credentials. Under
// --client-cert-auth the browser's certificate is the user: 200, or 403
// for one who may not list regions (they may still see what their roles
// allow); 401 for a certificate that names no user, who may sign in.
async function start() {
  try {
    await probe();
    securityOn = false;
    enter();
  } catch (e) {
    if (e.status === 403 && api.certificateName() !== null) {
      securityOn = false;
      enter();
      return;
    }
    if (e.status === 401) {
      securityOn = true;
      login(api.certificateName() !== null ? `Your browser's client certificate (${api.certificateName()}) names no user of this cluster: sign in with a user and password.` : undefined);
      return;
    }
    fill(root, h('div.login-wrap', h('div.login',
      brand(), errorBox(e), h('button.primary', { onclick: () => start() }, 'Try again'))));
  }
}

// probe asks GET /kv/v1 without Basic credentials: first as every call
// is sent, without the browser's credentials; when that gets no answer at
// all, once more with them, for a node that requires a client certificate
// (--client-cert-auth), which fetch presents only with credentials. The
// way that got an answer stays for every call.
async function probe() {
  try {
    return await api.call('GET', '/kv/v1', { auth: false });
  } catch (e) {
    if (!e.network || api.byCertificate()) throw e;
  }
  api.useCertificate();
  try {
    return await api.call('GET', '/kv/v1', { auth: false });
  } catch (e) {
    if (e.network) api.useCertificate(false);
    throw e;
  }
}

function brand() {
  return h('div.brand', h('img', { src: 'favicon.svg', alt: '' }), h('b', 'kvnode'), h('span.muted', 'console'));
}

function login(message) {
  teardown();
  api.signOut();
  const user = h('input#login-user', { type: 'text', name: 'username', autocomplete: 'username', required: true, autofocus: true });
  const pass = h('input#login-password', { type: 'password', name: 'password', autocomplete: 'current-password', required: true });
  const err = h('div#login-error');
  const submit = h('button.primary#login-submit', { type: 'submit' }, 'Sign in');
  const form = h('form#login-form', {
    onsubmit: async (e) => {
      e.preventDefault();
      submit.disabled = true;
      fill(err);
      api.signIn(user.value, pass.value);
      try {
        // Valid credentials: 200, or 403 for a user who may not list
        // regions (they may still see what their roles allow).
        await api.call('GET', '/kv/v1').catch((e2) => { if (e2.status !== 403) throw e2; });
        pass.value = '';
        enter();
      } catch (e2) {
        api.signOut();
        fill(err, e2.status === 401
          ? h('div.alert.error', { role: 'alert' }, h('div.title', 'Sign-in failed'), h('div.cause', e2.cause))
          : errorBox(e2));
        pass.select();
      } finally {
        submit.disabled = false;
      }
    },
  },
  h('div.field', h('label.lbl', { for: 'login-user' }, 'User'), user),
  h('div.field', h('label.lbl', { for: 'login-password' }, 'Password'), pass),
  err, submit);
  fill(root, h('div.login-wrap', h('div.login#login',
    brand(),
    h('h1', 'Sign in'),
    h('p.muted', 'This cluster runs with security on. Use the user and password of its security file.'),
    message ? h('div.alert.warn', message) : null,
    form,
    h('p.note', 'Your password is kept in this tab\'s memory only, sent as HTTP Basic credentials with each API call, and forgotten when you sign out, reload or close the tab.'))));
  user.focus();
}

function teardown() {
  if (unmount) unmount();
  unmount = null;
  if (unsubscribe) unsubscribe();
  unsubscribe = null;
  status.stop();
  shell = null;
}

function enter() {
  const nav = h('nav.sidebar', { 'aria-label': 'Sections' });
  for (const [id, v] of Object.entries(views)) {
    nav.append(h('a', { href: `#/${id}`, dataset: { view: id } }, h('span.ico', { 'aria-hidden': 'true' }, v.icon), v.title));
  }
  nav.append(h('div.sep'),
    h('a', { href: '../docs/', target: '_blank', rel: 'noopener' }, h('span.ico', '↗'), 'API reference'),
    h('div.foot', 'REST API: /kv/v1, /management/v1'));
  const pill = h('span.pill#health', h('span.dot'), h('span', 'Connecting…'));
  const userBox = securityOn
    ? h('div.user', h('span.avatar', api.user().slice(0, 1) || '?'), h('span#user-name', api.user()),
      h('button.small#sign-out', { onclick: () => login() }, 'Sign out'))
    : api.certificateName() !== null
      ? h('div.user', h('span.badge.green#by-certificate', { title: 'Your browser\'s client certificate signs every call in: its common name is your user (a node without --security-file lets every certificate its CA signed do everything). Closing the browser ends the session.' }, 'Client certificate'),
        h('span#user-name', api.certificateName()))
      : h('div.user', h('span.badge.amber', { title: 'The node runs without --security-file: anyone who reaches it may read and write.' }, 'Security off'));
  const main = h('main.main#main');
  shell = { nav, main, pill };
  fill(root, h('div.shell',
    h('header.topbar', h('div.brand', h('img', { src: 'favicon.svg', alt: '' }), h('b', 'kvnode'), h('span', 'console')),
      pill, h('div.grow'), userBox),
    nav, main));
  unsubscribe = status.subscribe((s) => {
    if (!shell) return;
    const sum = status.summary(s);
    fill(pill, h('span.dot', { class: sum.level }), h('span', sum.text));
  });
  status.start();
  route();
}

function route() {
  if (!shell) return;
  const hash = location.hash.replace(/^#\/?/, '');
  const [name, ...rest] = hash.split('/');
  const id = views[name] ? name : 'overview';
  if (!views[name]) {
    history.replaceState(null, '', '#/overview');
  }
  for (const a of shell.nav.querySelectorAll('a[data-view]')) a.classList.toggle('active', a.dataset.view === id);
  if (unmount) unmount();
  unmount = null;
  shell.main.replaceChildren();
  shell.main.scrollTop = 0;
  document.title = `${views[id].title} · kvnode console`;
  const arg = rest.map((s) => { try { return decodeURIComponent(s); } catch (_) { return s; } }).join('/');
  unmount = views[id].view.mount(shell.main, arg) || null;
}

window.addEventListener('hashchange', route);
api.onUnauthorized((e) => {
  if (securityOn && shell) {
    login(`Signed out: the node refused the credentials (${e.cause}).`);
    toast('Your session ended: sign in again', 'error');
  }
});
start();
