// The entry browser: a region's keys (GET /kv/v1/{region}/keys, in key
// order), paged here, each page's values read in one multi-key GET
// (/kv/v1/{region}/k1,k2,...?ignoreMissingKey=true); an entry's JSON; put
// (upsert, create-if-absent, replace) and delete.

import { call, getJSON, seg } from '../api.js';
import { h, fill, fmtInt, showError, toast, modal, confirmDanger, busy, empty, spinner } from '../dom.js';
import * as json from '../json.js';

const PAGE_SIZES = [25, 50, 100, 200];
// The longest path a page's GET may have: well under the node's 96 KiB
// limit on request URLs, so that a page of long keys is read in parts.
const MAX_PATH = 16000;

export function mount(main, regionArg) {
  const st = { region: regionArg || '', type: '', keys: null, filtered: [], page: 0, size: 25, filter: '', selected: null, values: new Map() };
  const select = h('select#data-region', { onchange: () => { location.hash = `#/data/${encodeURIComponent(select.value)}`; } });
  const info = h('span.sub#data-info');
  const err = h('div#data-error');
  const filter = h('input#key-filter', { type: 'text', placeholder: 'Filter keys (substring)…', autocomplete: 'off' });
  const size = h('select#page-size', PAGE_SIZES.map((n) => h('option', { value: n, selected: n === st.size }, `${n} per page`)));
  const tableBox = h('div.body.flush#entries');
  const pager = h('div.pager#pager');
  const detail = h('div.body#entry-detail');
  const putBtn = h('button.primary#put-entry', { onclick: () => edit(null) }, 'Put entry');
  fill(main,
    h('div.page-head', h('h1', 'Data browser'), select, info, h('div.grow'),
      h('button.small#data-refresh', { onclick: () => loadKeys() }, 'Refresh'), putBtn),
    err,
    h('div.split',
      h('div.panel', h('div.head', filter, size), tableBox, pager),
      h('div.panel', h('div.head', h('h2', 'Entry')), detail)));

  let filterTimer = null;
  filter.addEventListener('input', () => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(() => { st.filter = filter.value; st.page = 0; applyFilter(); showPage(); }, 150);
  });
  size.addEventListener('change', () => { st.size = Number(size.value); st.page = 0; showPage(); });

  renderDetail();
  loadRegionList();

  async function loadRegionList() {
    try {
      const doc = await getJSON('/kv/v1');
      const regions = (doc.regions || []).sort((a, b) => a.name.localeCompare(b.name));
      fill(select, h('option', { value: '', disabled: true, selected: !st.region }, 'Choose a region…'),
        regions.map((r) => h('option', { value: r.name, selected: r.name === st.region }, r.name)));
      const r = regions.find((x) => x.name === st.region);
      if (!st.region) {
        putBtn.disabled = true;
        fill(tableBox, regions.length ? empty('Choose a region', 'Its entries are listed here, in key order.')
          : empty('No regions yet', h('a', { href: '#/regions' }, 'Create a region first')));
        return;
      }
      if (!r) {
        showError(err, { message: `There is no region "${st.region}".` });
        putBtn.disabled = true;
        return;
      }
      st.type = r.type;
      loadKeys();
    } catch (e) {
      showError(err, e);
    }
  }

  async function loadKeys(keep) {
    fill(tableBox, h('div.empty', spinner()));
    try {
      const [keysResp, head] = await Promise.all([
        getJSON(`/kv/v1/${seg(st.region)}/keys`),
        call('HEAD', `/kv/v1/${seg(st.region)}`),
      ]);
      st.keys = keysResp.keys || [];
      st.values.clear();
      showError(err, null);
      fill(info, h('span.badge', { class: st.type === 'PARTITION' ? 'blue' : '' }, st.type), ' ',
        `${fmtInt(Number(head.headers.get('Resource-Count')))} entries`);
      applyFilter();
      if (keep && st.selected !== null) {
        const at = st.filtered.indexOf(st.selected);
        if (at >= 0) st.page = Math.floor(at / st.size);
      }
      st.page = Math.min(st.page, Math.max(0, Math.ceil(st.filtered.length / st.size) - 1));
      await showPage();
    } catch (e) {
      fill(tableBox);
      showError(err, e);
    }
  }

  function applyFilter() {
    if (!st.keys) return;
    st.filtered = st.filter ? st.keys.filter((k) => k.includes(st.filter)) : st.keys;
  }

  // readValues reads keys' values in as few GETs as fit MAX_PATH.
  async function readValues(keys) {
    const base = `/kv/v1/${seg(st.region)}/`;
    const chunks = [];
    let cur = [];
    let len = base.length;
    for (const k of keys) {
      const s = seg(k);
      if (cur.length && len + s.length + 1 > MAX_PATH) {
        chunks.push(cur);
        cur = [];
        len = base.length;
      }
      cur.push(k);
      len += s.length + 1;
    }
    if (cur.length) chunks.push(cur);
    await Promise.all(chunks.map(async (chunk) => {
      if (chunk.length === 1) {
        try {
          const r = await call('GET', base + seg(chunk[0]));
          st.values.set(chunk[0], json.parse(r.text));
        } catch (e) {
          if (e.status !== 404) throw e;
          st.values.set(chunk[0], null);
        }
        return;
      }
      const r = await call('GET', base + chunk.map(seg).join(','), { query: { ignoreMissingKey: 'true' } });
      const doc = json.parse(r.text);
      const items = doc.entries[0][1].items;
      chunk.forEach((k, i) => st.values.set(k, items[i].t === 'null' ? null : items[i]));
    }));
  }

  async function showPage() {
    if (!st.keys) return;
    const total = st.filtered.length;
    const pages = Math.max(1, Math.ceil(total / st.size));
    const from = st.page * st.size;
    const keys = st.filtered.slice(from, from + st.size);
    const missing = keys.filter((k) => !st.values.has(k));
    try {
      if (missing.length) await readValues(missing);
    } catch (e) {
      showError(err, e);
    }
    if (!st.keys.length) {
      fill(tableBox, empty('This region is empty', 'Put an entry with the button above.'));
    } else if (!total) {
      fill(tableBox, empty('No key matches', `No key contains "${st.filter}".`));
    } else {
      fill(tableBox, h('div.table-scroll', h('table.grid#entries-table',
        h('thead', h('tr', h('th', 'Key'), h('th', 'Value'))),
        h('tbody', keys.map((k) => {
          const v = st.values.get(k);
          return h('tr.clickable', { class: k === st.selected ? 'selected' : '', dataset: { key: k }, onclick: () => select1(k) },
            h('td.key', k),
            h('td.preview', v === undefined ? '' : v === null ? h('span.faint', '(deleted meanwhile)') : json.compact(v)));
        })))));
    }
    fill(pager,
      h('button.small#page-prev', { disabled: st.page === 0, onclick: () => { st.page--; showPage(); } }, '‹ Previous'),
      h('span#page-info', total ? `${fmtInt(from + 1)}–${fmtInt(Math.min(from + st.size, total))} of ${fmtInt(total)} keys${st.filter ? ` matching (of ${fmtInt(st.keys.length)})` : ''}` : ''),
      h('div.grow'),
      h('span', `Page ${st.page + 1} of ${pages}`),
      h('button.small#page-next', { disabled: st.page >= pages - 1, onclick: () => { st.page++; showPage(); } }, 'Next ›'));
  }

  function select1(k) {
    st.selected = k;
    for (const tr of tableBox.querySelectorAll('tr[data-key]')) tr.classList.toggle('selected', tr.dataset.key === k);
    renderDetail();
  }

  function renderDetail() {
    const k = st.selected;
    if (k === null) {
      fill(detail, empty('No entry selected', 'Click a row to see its value as JSON.'));
      return;
    }
    const v = st.values.get(k);
    fill(detail,
      h('div.detail-head', h('span.muted', 'Key'), h('span.k#detail-key', k), h('div.grow'),
        h('button.small#copy-value', { disabled: !v, onclick: () => copy(v) }, 'Copy'),
        h('button.small#edit-entry', { disabled: !v, onclick: () => edit(k) }, 'Edit'),
        h('button.small.danger#delete-entry', { onclick: () => del(k) }, 'Delete')),
      v ? json.view(v) : h('div.alert.warn', 'This entry was deleted after the page was read.'),
      v ? h('div.hint', `${json.compact(v).length.toLocaleString('en-US')} bytes as stored`) : null);
  }

  async function copy(v) {
    try {
      await navigator.clipboard.writeText(json.pretty(v));
      toast('Value copied');
    } catch (_) {
      toast('The browser did not allow copying', 'error');
    }
  }

  async function del(k) {
    const ok = await confirmDanger('Delete entry?', `The entry "${k}" of ${st.region} is deleted on every member.`, 'Delete');
    if (!ok) return;
    try {
      await call('DELETE', `/kv/v1/${seg(st.region)}/${seg(k)}`);
      toast(`Deleted ${st.region}/${k}`);
      st.selected = null;
      renderDetail();
      loadKeys();
    } catch (e) {
      showError(err, e);
    }
  }

  async function edit(k) {
    const editing = k !== null;
    const key = h('input#put-key', { type: 'text', value: editing ? k : '', disabled: editing, autocomplete: 'off', placeholder: 'a key, e.g. 1 or order-42' });
    const value = h('textarea#put-value', { rows: 9, spellcheck: 'false' });
    value.value = editing && st.values.get(k) ? json.pretty(st.values.get(k)) : '{\n  \n}';
    const check = h('div.hint#put-check');
    const modeName = 'put-mode';
    const modes = [
      ['put', 'Put', 'create or overwrite (PUT)'],
      ['create', 'Create only', 'refused if the key exists (POST ?key=)'],
      ['replace', 'Replace only', 'refused if the key is absent (PUT ?op=REPLACE)'],
    ];
    const radios = h('div.radio-row', modes.map(([id, label, hint], i) => h('label', { title: hint },
      h('input', { type: 'radio', name: modeName, value: id, checked: editing ? id === 'replace' : i === 0 }), label)));
    const errBox = h('div#put-error');
    const validate = () => {
      const msg = json.check(value.value);
      check.textContent = msg ? `Not valid JSON: ${msg}` : 'Valid JSON. Stored as sent (compacted): member order and number forms are kept.';
      check.classList.toggle('muted', !msg);
      return !msg;
    };
    value.addEventListener('input', validate);
    validate();
    await modal(editing ? `Edit ${st.region}/${k}` : `Put an entry into ${st.region}`, h('div',
      h('div.field', h('label.lbl', { for: 'put-key' }, 'Key'), key),
      h('div.field', h('label.lbl', { for: 'put-value' }, 'Value (JSON)'), value, check),
      h('div.field', h('label.lbl', 'Write'), radios),
      errBox), (done) => {
      const save = h('button.primary#put-save', {
        onclick: async () => {
          showError(errBox, null);
          if (!validate()) return;
          const kk = editing ? k : key.value;
          if (!kk) { showError(errBox, { message: 'A key is needed.' }); return; }
          const mode = radios.querySelector('input:checked').value;
          const base = `/kv/v1/${seg(st.region)}`;
          try {
            let r;
            if (mode === 'create') r = await busy(save, call('POST', base, { query: { key: kk }, body: value.value, conflictOK: true }));
            else r = await busy(save, call('PUT', `${base}/${seg(kk)}`, { query: { op: mode === 'replace' ? 'REPLACE' : undefined }, body: value.value }));
            if (r.status === 409) {
              fill(errBox, h('div.alert.error', { role: 'alert' }, h('div.title', 'Conflict'),
                h('div.cause', `The key "${kk}" exists already; nothing was written. Its current value:`)), json.view(json.parse(r.text)));
              errBox.scrollIntoView({ block: 'nearest' });
              return;
            }
            toast(`Stored ${st.region}/${kk}`);
            st.selected = kk;
            done(true);
            await loadKeys(true);
            renderDetail();
          } catch (e) {
            showError(errBox, e);
            errBox.scrollIntoView({ block: 'nearest' });
          }
        },
      }, editing ? 'Save' : 'Put');
      return [h('button', { onclick: () => done(null) }, 'Cancel'), save];
    }, { wide: true });
  }
}
