// Query: an OQL editor with bind values, results as a table or as JSON,
// and the named queries (/kv/v1/queries): list, load, run with bind
// values, save, update and delete.

import { call, getJSON, seg } from '../api.js';
import { h, fill, errorBox, showError, toast, modal, confirmDanger, busy, empty, spinner } from '../dom.js';
import * as json from '../json.js';
import * as oql from '../oql.js';

// The editor outlives a visit to another view, as a query tool's should.
const saved = { text: '', binds: [], named: null };

export function mount(main, arg) {
  if (arg) {
    saved.text = arg;
    saved.named = null;
  }
  const text = h('textarea.oql#oql', { spellcheck: 'false', 'aria-label': 'OQL query', placeholder: 'SELECT o.customer, o.total FROM /orders o WHERE o.total > $1 ORDER BY o.total DESC' });
  text.value = saved.text;
  const chip = h('span');
  const stale = h('input#stale', { type: 'checkbox' });
  const bindsBox = h('div#binds');
  const err = h('div#query-error');
  const run = h('button.primary#run-query', { onclick: () => execute() }, '▶ Run');
  const saveAs = h('button#save-query', { onclick: () => saveNamed() }, 'Save as named query…');
  const update = h('button#update-query', { onclick: () => updateNamed() }, 'Update named query');
  const meta = h('span.results-meta#results-meta');
  const segTable = h('button.on', 'Table');
  const segJSON = h('button', 'JSON');
  const results = h('div.body.flush#results');
  const namedBox = h('div.body.flush#named-queries');
  let last = null; // {node}
  let mode = 'table';
  segTable.onclick = () => { mode = 'table'; renderResults(); };
  segJSON.onclick = () => { mode = 'json'; renderResults(); };

  fill(main,
    h('div.page-head', h('h1', 'Query'), h('span.sub', 'OQL, as in Geode: SELECT … FROM /region r WHERE … ORDER BY … LIMIT …')),
    h('div.split',
      h('div',
        h('div.panel', h('div.head', h('h2', 'OQL'), chip, h('div.grow'),
          h('label.row', { title: 'Read this node\'s replicas without a quorum round (consistency=stale)' }, stale, 'stale reads')),
        h('div.body', text, bindsBox,
          h('div.row', run, h('span.hint', h('span.kbd', 'Ctrl'), ' + ', h('span.kbd', 'Enter')), h('div.grow'), update, saveAs),
          err)),
        h('div.panel', h('div.head', h('h2', 'Results'), meta, h('div.grow'), h('div.seg', segTable, segJSON)), results)),
      h('div.panel', h('div.head', h('h2', 'Named queries'), h('div.grow'), h('button.small', { onclick: () => loadNamed() }, 'Refresh')), namedBox)));

  text.addEventListener('input', () => { saved.text = text.value; syncBinds(); renderChip(); });
  text.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); execute(); }
  });
  syncBinds();
  renderChip();
  fill(results, empty('No results yet', 'Run a query to see its rows here.'));
  loadNamed();

  // syncBinds keeps one row per parameter $1..$n of the text, keeping the
  // values typed so far.
  function syncBinds() {
    const n = oql.params(text.value);
    while (saved.binds.length < n) saved.binds.push({ type: 'string', value: '' });
    const rows = [];
    for (let i = 0; i < n; i++) {
      const b = saved.binds[i];
      const type = h('select', { 'aria-label': `type of $${i + 1}`, dataset: { bind: String(i + 1) } },
        oql.scalarTypes.map((t) => h('option', { value: t, selected: t === b.type }, t)));
      const val = h('input', { type: 'text', value: b.value, placeholder: 'value', 'aria-label': `value of $${i + 1}`, dataset: { bindValue: String(i + 1) } });
      type.onchange = () => { b.type = type.value; };
      val.oninput = () => { b.value = val.value; };
      val.onkeydown = (e) => { if (e.key === 'Enter') { e.preventDefault(); execute(); } };
      rows.push(h('span.pos', `$${i + 1}`), type, val, h('span'));
    }
    fill(bindsBox, n ? [h('label.lbl', 'Bind values'), h('div.binds', rows)] : null);
  }

  function binds() {
    const n = oql.params(text.value);
    const out = saved.binds.slice(0, n);
    for (const [i, b] of out.entries()) {
      const msg = oql.checkScalar(b.type, b.value);
      if (msg) throw new Error(`$${i + 1}: ${msg}`);
    }
    return out;
  }

  function renderChip() {
    update.classList.toggle('hidden', !saved.named);
    if (!saved.named) {
      fill(chip);
      return;
    }
    const edited = saved.named.oql !== text.value;
    fill(chip, h('span.chip#named-chip', { title: edited ? 'Edited: Run runs the text as an ad-hoc query until you update the named query' : 'Run runs the named query on the server' },
      `named: ${saved.named.id}${edited ? ' (edited)' : ''}`,
      h('button', { 'aria-label': 'Detach from the named query', onclick: () => { saved.named = null; renderChip(); } }, '×')));
  }

  async function execute() {
    showError(err, null);
    let b;
    try {
      b = binds();
    } catch (e) {
      showError(err, { message: e.message });
      return;
    }
    const consistency = stale.checked ? 'stale' : undefined;
    const started = performance.now();
    fill(results, h('div.empty', spinner()));
    meta.textContent = '';
    try {
      let r;
      let how;
      if (saved.named && saved.named.oql === text.value) {
        how = `named query ${saved.named.id}`;
        r = await busy(run, call('POST', `/kv/v1/queries/${seg(saved.named.id)}`, { query: { consistency }, json: b.map((x) => oql.typed(x.type, x.value)) }));
      } else {
        let q = text.value;
        if (b.length) q = oql.substitute(q, b);
        how = 'ad hoc';
        r = await busy(run, call('GET', '/kv/v1/queries/adhoc', { query: { q, consistency } }));
      }
      const ms = performance.now() - started;
      last = { node: r.text ? json.parse(r.text) : { t: 'arr', items: [] }, how, ms };
      renderResults();
    } catch (e) {
      last = null;
      fill(results, empty('No results', 'The query failed: see the error above.'));
      showError(err, e.status !== undefined ? e : { message: e.message });
    }
  }

  function renderResults() {
    segTable.classList.toggle('on', mode === 'table');
    segJSON.classList.toggle('on', mode === 'json');
    if (!last) return;
    const rows = last.node.t === 'arr' ? last.node.items : [last.node];
    meta.textContent = `${rows.length.toLocaleString('en-US')} row${rows.length === 1 ? '' : 's'} · ${Math.round(last.ms)} ms · ${last.how}`;
    if (mode === 'json') {
      fill(results, h('div.body', json.view(last.node)));
      return;
    }
    if (!rows.length) {
      fill(results, empty('No rows', 'The query matched nothing.'));
      return;
    }
    fill(results, resultTable(rows, 'results-table'));
  }

  async function loadNamed() {
    fill(namedBox, h('div.empty', spinner()));
    try {
      const doc = await getJSON('/kv/v1/queries');
      const qs = (doc.queries || []).sort((a, b) => a.id.localeCompare(b.id));
      if (!qs.length) {
        fill(namedBox, empty('No named queries', 'Save the query in the editor with "Save as named query…".'));
        return;
      }
      fill(namedBox, h('ul.list#named-list', qs.map((q) => h('li', {
        class: saved.named && saved.named.id === q.id ? 'active' : '',
        dataset: { query: q.id },
        onclick: () => load(q),
      },
      h('div.title', q.id),
      h('div.snippet', { title: q.oql }, q.oql),
      h('div.acts',
        h('button.small', { onclick: (e) => { e.stopPropagation(); load(q); execute(); } }, 'Run'),
        h('button.small.danger', { onclick: (e) => { e.stopPropagation(); remove(q.id); } }, 'Delete'))))));
    } catch (e) {
      fill(namedBox, h('div.body', errorBox(e)));
    }
  }

  function load(q) {
    saved.named = { id: q.id, oql: q.oql };
    saved.text = q.oql;
    text.value = q.oql;
    syncBinds();
    renderChip();
    for (const li of namedBox.querySelectorAll('li')) li.classList.toggle('active', li.dataset.query === q.id);
  }

  async function remove(id) {
    if (!(await confirmDanger(`Delete named query ${id}?`, `The named query ${id} is removed for every member and client.`, 'Delete'))) return;
    try {
      await call('DELETE', `/kv/v1/queries/${seg(id)}`);
      toast(`Named query ${id} deleted`);
      if (saved.named && saved.named.id === id) saved.named = null;
      renderChip();
    } catch (e) {
      showError(err, e);
    }
    loadNamed();
  }

  async function saveNamed() {
    const id = h('input#named-id', { type: 'text', placeholder: 'bigOrders', autocomplete: 'off' });
    const errBox = h('div');
    await modal('Save as named query', h('div',
      h('div.field', h('label.lbl', { for: 'named-id' }, 'Query ID'), id,
        h('div.hint', 'Stored in the cluster\'s control group; its $1, $2, … are bound on the server when it runs.')),
      h('pre.json', text.value), errBox), (done) => {
      const ok = h('button.primary#named-save', {
        onclick: async () => {
          showError(errBox, null);
          try {
            await busy(ok, call('POST', '/kv/v1/queries', { query: { id: id.value.trim(), q: text.value } }));
            toast(`Named query ${id.value.trim()} saved`);
            saved.named = { id: id.value.trim(), oql: text.value };
            renderChip();
            loadNamed();
            done(true);
          } catch (e) {
            showError(errBox, e);
          }
        },
      }, 'Save');
      id.onkeydown = (e) => { if (e.key === 'Enter') ok.click(); };
      return [h('button', { onclick: () => done(null) }, 'Cancel'), ok];
    });
  }

  async function updateNamed() {
    if (!saved.named) return;
    showError(err, null);
    try {
      await busy(update, call('PUT', `/kv/v1/queries/${seg(saved.named.id)}`, { query: { q: text.value } }));
      saved.named.oql = text.value;
      toast(`Named query ${saved.named.id} updated`);
      renderChip();
      loadNamed();
    } catch (e) {
      showError(err, e);
    }
  }
}

// resultTable shows rows as a table: when every row is an object (a
// struct, or a stored object), one column per member, in the order they
// first appear; otherwise one column of values.
export function resultTable(rows, id) {
  const objects = rows.every((r) => r.t === 'obj');
  const cols = [];
  if (objects) {
    const seen = new Set();
    for (const r of rows) for (const [k] of r.entries) if (!seen.has(k)) { seen.add(k); cols.push(k); }
  }
  const cellOf = (n) => h('td.cell', { class: json.cellClass(n), title: n ? json.cell(n).slice(0, 2000) : '' },
    n === undefined ? h('span.faint', '—') : json.cell(n));
  return h('div.table-scroll', h('table.grid', { id },
    h('thead', h('tr', h('th.num.idx', '#'), objects ? cols.map((c) => h('th', c)) : h('th', 'Value'))),
    h('tbody', rows.map((r, i) => h('tr',
      h('td.num.idx.faint', String(i + 1)),
      objects ? cols.map((c) => cellOf(json.member(r, c))) : cellOf(r))))));
}
