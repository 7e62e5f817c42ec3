// Functions: the registered functions (/kv/v1/functions), the deployed
// JavaScript ones with their source (/management/v1/functions, for users
// with CLUSTER:MANAGE), and running one with a target and arguments.

import { call, getJSON, seg } from '../api.js';
import { h, fill, showError, busy, empty, spinner } from '../dom.js';
import * as json from '../json.js';
import * as oql from '../oql.js';
import * as status from '../status.js';
import { resultTable } from './query.js';

const builtins = {
  MemberInfo: { text: 'Each member\'s name, member groups, REST URL, version, uptime and Raft groups with their roles.' },
  RegionSize: { text: 'A region\'s entries per member and partition group, and their total.', region: true },
  SumField: { text: 'The sum of a numeric member over a region\'s entries: partial sums per group, merged.', region: true, args: [['string', 'total']] },
  GetAll: { text: 'The values of the filter\'s keys, in the filter\'s order (null for a missing key).', region: true },
  ClearRegion: { text: 'Removes every entry of a region, group by group through Raft (also a partitioned region, which DELETE refuses).', region: true },
};

export function mount(main, arg) {
  const listBox = h('div.body.flush#function-list');
  const runBox = h('div#function-run');
  const err = h('div');
  let deployed = new Map();
  let current = arg || '';
  fill(main,
    h('div.page-head', h('h1', 'Functions'), h('span.sub', 'Server-side functions: built-ins and JavaScript deployed at run time'),
      h('div.grow'), h('button.small', { onclick: () => load() }, 'Refresh')),
    err,
    h('div.split.wide-right',
      h('div.panel', h('div.head', h('h2', 'Registered')), listBox),
      runBox));

  async function load() {
    fill(listBox, h('div.empty', spinner()));
    try {
      const doc = await getJSON('/kv/v1/functions');
      try {
        const dep = await getJSON('/management/v1/functions');
        deployed = new Map((dep.result || []).map((d) => [d.id, d]));
      } catch (_) {
        deployed = new Map(); // needs CLUSTER:MANAGE; the list still works
      }
      const ids = (doc.functions || []).slice().sort();
      showError(err, null);
      if (!ids.length) {
        fill(listBox, empty('No functions', ''));
        return;
      }
      fill(listBox, h('ul.list', ids.map((id) => h('li', {
        class: id === current ? 'active' : '', dataset: { function: id },
        onclick: () => { location.hash = `#/functions/${encodeURIComponent(id)}`; },
      }, h('div.title', id, builtins[id] ? h('span.badge', 'built-in') : deployed.has(id) ? h('span.badge.blue', 'JavaScript') : null),
      h('div.snippet', builtins[id] ? builtins[id].text : deployed.has(id) ? deployed.get(id).source : '')))));
      if (current) showRun(current);
      else fill(runBox, h('div.panel', empty('Choose a function', 'Run it on every member, on a region, or on chosen members or groups.')));
    } catch (e) {
      fill(listBox);
      showError(err, e);
    }
  }

  async function showRun(id) {
    const b = builtins[id] || {};
    const dep = deployed.get(id);
    const targetName = 'fn-target';
    const targets = [['all', 'Every member'], ['region', 'A region'], ['members', 'Members'], ['groups', 'Member groups']];
    const radios = h('div.radio-row', targets.map(([v, label]) => h('label',
      h('input', { type: 'radio', name: targetName, value: v, checked: v === (b.region ? 'region' : 'all') }), label)));
    const regionSel = h('select#fn-region', h('option', { value: '' }, 'loading…'));
    const filter = h('input#fn-filter', { type: 'text', placeholder: 'k1,k2 (optional): only the groups owning these keys' });
    const memberChecks = h('div.radio-row#fn-members');
    const groups = h('input#fn-groups', { type: 'text', placeholder: 'east,west' });
    const argsBox = h('div#fn-args');
    const args = (b.args || []).map(([type, value]) => ({ type, value }));
    const errBox = h('div#function-error');
    const run = h('button.primary#run-function', 'Run');
    const meta = h('span.results-meta#function-meta');
    const results = h('div.body.flush#function-results');

    const rows = {
      region: h('div.field', h('label.lbl', 'Region'), h('div.row', regionSel, h('div.grow', filter))),
      members: h('div.field', h('label.lbl', 'Members'), memberChecks),
      groups: h('div.field', h('label.lbl', 'Member groups'), groups),
    };
    const target = () => radios.querySelector('input:checked').value;
    const showTarget = () => {
      for (const [k, el] of Object.entries(rows)) el.classList.toggle('hidden', k !== target());
    };
    radios.addEventListener('change', showTarget);

    const renderArgs = () => {
      const cells = [];
      args.forEach((a, i) => {
        const type = h('select', { 'aria-label': `type of argument ${i + 1}` },
          [...oql.scalarTypes, 'object'].map((t) => h('option', { value: t, selected: t === a.type }, t === 'object' ? 'object (JSON)' : t)));
        const val = h('input', { type: 'text', value: a.value, placeholder: a.type === 'object' ? '{"@type":"org.Order","id":1}' : 'value', dataset: { arg: String(i + 1) } });
        type.onchange = () => { a.type = type.value; renderArgs(); };
        val.oninput = () => { a.value = val.value; };
        cells.push(h('span.pos', String(i + 1)), type, val,
          h('button.small.icon', { 'aria-label': `remove argument ${i + 1}`, onclick: () => { args.splice(i, 1); renderArgs(); } }, '×'));
      });
      fill(argsBox, args.length ? h('div.binds', cells) : h('div.hint', 'No arguments.'),
        h('button.small#add-arg', { onclick: () => { args.push({ type: 'string', value: '' }); renderArgs(); } }, '+ Add argument'));
    };
    renderArgs();

    fill(runBox,
      h('div.panel', h('div.head', h('h2', id), b.text ? h('span.badge', 'built-in') : dep ? h('span.badge.blue', 'JavaScript') : null),
        h('div.body.stack',
          b.text ? h('p.muted', b.text) : null,
          dep ? h('div.muted', `Needs ${dep.permission || 'DATA:WRITE'}${dep.dataAware ? ' · data-aware' : ''}${dep.hasResult ? '' : ' · no result'}`) : null,
          dep ? h('details', h('summary', 'Source'), h('pre.json', dep.source)) : null,
          h('div.field', h('label.lbl', 'Run on'), radios),
          rows.region, rows.members, rows.groups,
          h('div.field', h('label.lbl', 'Arguments'), argsBox),
          h('div.row', run), errBox)),
      h('div.panel', h('div.head', h('h2', 'Result'), meta), results));
    showTarget();
    fill(results, empty('Not run yet', ''));

    getJSON('/kv/v1').then((doc) => {
      fill(regionSel, (doc.regions || []).map((r) => h('option', { value: r.name }, r.name)));
    }).catch((e) => fill(regionSel, h('option', { value: '' }, `(${e.cause})`)));
    const names = status.state.cluster ? status.state.cluster.members.map((m) => m.name) : [];
    fill(memberChecks, names.length ? names.map((n) => h('label', h('input', { type: 'checkbox', value: n }), n))
      : h('input#fn-member-names', { type: 'text', placeholder: 'n1,n2' }));

    run.onclick = async () => {
      showError(errBox, null);
      const q = {};
      switch (target()) {
        case 'region':
          if (!regionSel.value) {
            showError(errBox, { message: 'Choose a region to run the function on.' });
            return;
          }
          q.onRegion = regionSel.value;
          if (filter.value.trim()) q.filter = filter.value.trim();
          break;
        case 'members': {
          const picked = [...memberChecks.querySelectorAll('input:checked')].map((c) => c.value);
          const typed = memberChecks.querySelector('input[type=text]');
          q.onMembers = typed ? typed.value.trim() : picked.join(',');
          if (!q.onMembers) {
            showError(errBox, { message: 'Choose at least one member.' });
            return;
          }
          break;
        }
        case 'groups':
          q.onGroups = groups.value.trim();
          if (!q.onGroups) {
            showError(errBox, { message: 'Name at least one member group.' });
            return;
          }
          break;
      }
      let body;
      try {
        body = args.map((a, i) => {
          if (a.type === 'object') {
            const msg = json.check(a.value);
            if (msg || !a.value.trim().startsWith('{')) throw new Error(`argument ${i + 1}: not a JSON object${msg ? ` (${msg})` : ''}`);
            return a.value.trim();
          }
          const msg = oql.checkScalar(a.type, a.value);
          if (msg) throw new Error(`argument ${i + 1}: ${msg}`);
          return JSON.stringify(oql.typed(a.type, a.value));
        });
      } catch (e) {
        showError(errBox, { message: e.message });
        return;
      }
      const started = performance.now();
      fill(results, h('div.empty', spinner()));
      meta.textContent = '';
      try {
        const r = await busy(run, call('POST', `/kv/v1/functions/${seg(id)}`, { query: q, body: body.length ? `[${body.join(',')}]` : undefined }));
        const ms = Math.round(performance.now() - started);
        if (!r.text) {
          meta.textContent = `${ms} ms`;
          fill(results, empty('Done', 'The function returns no result.'));
          return;
        }
        const node = json.parse(r.text);
        const items = node.t === 'arr' ? node.items : [node];
        meta.textContent = `${items.length} result${items.length === 1 ? '' : 's'} · ${ms} ms`;
        fill(results, resultTable(items, 'function-table'), h('div.body', json.view(node)));
      } catch (e) {
        fill(results, empty('No result', 'The call failed: see the error above.'));
        showError(errBox, e);
      }
    };
  }

  load();
}

