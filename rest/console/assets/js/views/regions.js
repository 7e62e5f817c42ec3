// Regions: the list with types and sizes, creating and destroying
// regions (/management/v1/regions), and each region's indexes.

import { call, getJSON, seg } from '../api.js';
import { h, fill, fmtInt, showError, toast, modal, confirmDanger, busy, empty, spinner } from '../dom.js';

// loadRegions is GET /kv/v1 and a HEAD per region for its entry count
// (Resource-Count), as `kvnode status` does.
export async function loadRegions() {
  const doc = await getJSON('/kv/v1');
  const list = doc.regions || [];
  await Promise.all(list.map(async (r) => {
    try {
      const resp = await call('HEAD', `/kv/v1/${seg(r.name)}`);
      r.entries = Number(resp.headers.get('Resource-Count'));
    } catch (e) {
      r.sizeError = e.cause;
    }
  }));
  list.sort((a, b) => a.name.localeCompare(b.name));
  return list;
}

export const regionTypes = ['REPLICATE', 'PARTITION'];

export function mount(main) {
  const listBox = h('div.body.flush#regions');
  const err = h('div');
  const formErr = h('div#create-region-error');
  const name = h('input#region-name', { type: 'text', placeholder: 'orders', pattern: '[A-Za-z0-9_\\-]{1,128}', required: true, autocomplete: 'off' });
  const type = h('select#region-type', regionTypes.map((t) => h('option', { value: t }, t)));
  const create = h('button.primary#create-region', { type: 'submit' }, 'Create region');
  const form = h('form.row', {
    onsubmit: async (e) => {
      e.preventDefault();
      showError(formErr, null);
      try {
        await busy(create, call('POST', '/management/v1/regions', { json: { name: name.value.trim(), type: type.value } }));
        toast(`Region ${name.value.trim()} created`);
        name.value = '';
        load();
      } catch (e2) {
        showError(formErr, e2);
      }
    },
  }, h('div', h('label.lbl', { for: 'region-name' }, 'Name'), name),
  h('div', h('label.lbl', { for: 'region-type' }, 'Type'), type),
  h('div', h('label.lbl', '\u00a0'), create));
  fill(main,
    h('div.page-head', h('h1', 'Regions'), h('span.sub', 'REPLICATE: every entry on every member · PARTITION: keys hashed over the partition groups'),
      h('div.grow'), h('button.small', { onclick: () => load() }, 'Refresh')),
    h('div.panel', h('div.head', h('h2', 'New region')), h('div.body', form,
      h('div.hint', '1–128 letters, digits, _ or -. Geode\'s type names are accepted too (PARTITION_REDUNDANT becomes PARTITION); creating needs CLUSTER:MANAGE.'), formErr)),
    err,
    h('div.panel', h('div.head', h('h2', 'All regions')), listBox));

  async function load() {
    fill(listBox, h('div.empty', spinner()));
    try {
      const list = await loadRegions();
      showError(err, null);
      if (!list.length) {
        fill(listBox, empty('No regions yet', 'Create the first one above.'));
        return;
      }
      fill(listBox, h('div.table-scroll', h('table.grid#regions-table',
        h('thead', h('tr', h('th', 'Name'), h('th', 'Type'), h('th.num', 'Entries'), h('th', ''))),
        h('tbody', list.map((r) => h('tr', { dataset: { region: r.name } },
          h('td', h('a', { href: `#/data/${encodeURIComponent(r.name)}` }, h('b', r.name))),
          h('td', h('span.badge', { class: r.type === 'PARTITION' ? 'blue' : '' }, r.type)),
          h('td.num', typeof r.entries === 'number' ? fmtInt(r.entries) : h('span.faint', { title: r.sizeError || '' }, '—')),
          h('td.actions', h('div.row', { class: 'nowrap' },
            h('a.btn.small', { href: `#/data/${encodeURIComponent(r.name)}` }, 'Browse'),
            h('a.btn.small', { href: `#/query/${encodeURIComponent(`SELECT * FROM /${r.name} r`)}` }, 'Query'),
            h('button.small', { onclick: () => indexes(r.name) }, 'Indexes'),
            h('button.small.danger', { onclick: () => destroy(r.name) }, 'Destroy')))))))));
    } catch (e) {
      fill(listBox);
      showError(err, e);
    }
  }

  async function destroy(region) {
    const ok = await confirmDanger(`Destroy region ${region}?`,
      `The region ${region} and every entry in it are removed from every member. This cannot be undone.`, 'Destroy region');
    if (!ok) return;
    try {
      await call('DELETE', `/management/v1/regions/${seg(region)}`);
      toast(`Region ${region} destroyed`);
    } catch (e) {
      showError(err, e);
    }
    load();
  }

  load();
}

// indexes shows a region's indexes in a dialog: list, create, drop.
async function indexes(region) {
  const list = h('div');
  const err = h('div');
  const iname = h('input', { type: 'text', placeholder: 'byCustomer' });
  const expr = h('input', { type: 'text', placeholder: 'r.customerId' });
  const from = h('input', { type: 'text', value: `/${region} r` });
  const add = h('button.primary', 'Create index');
  const base = `/management/v1/regions/${seg(region)}/indexes`;
  async function load() {
    try {
      const doc = await getJSON(base);
      const items = doc.result || doc.indexes || [];
      fill(list, items.length ? h('table.grid', h('thead', h('tr', h('th', 'Name'), h('th', 'Expression'), h('th', 'From'), h('th', ''))),
        h('tbody', items.map((ix) => h('tr',
          h('td', h('b', ix.name)), h('td.mono', ix.expression), h('td.mono', ix.from || ix.regionPath || ''),
          h('td.actions', h('button.small.danger', {
            onclick: async () => {
              try {
                await call('DELETE', `${base}/${seg(ix.name)}`);
                toast(`Index ${ix.name} dropped`);
              } catch (e) { showError(err, e); }
              load();
            },
          }, 'Drop')))))) : empty('No indexes', 'Queries on this region scan its entries.'));
    } catch (e) {
      fill(list);
      showError(err, e);
    }
  }
  add.onclick = async () => {
    showError(err, null);
    try {
      await busy(add, call('POST', base, { json: { name: iname.value.trim(), expression: expr.value.trim(), from: from.value.trim() } }));
      toast(`Index ${iname.value.trim()} created`);
      iname.value = '';
      expr.value = '';
      load();
    } catch (e) { showError(err, e); }
  };
  load();
  await modal(`Indexes of ${region}`, h('div.stack', list, err,
    h('h3', 'New index'),
    h('div.row', h('div.grow', h('label.lbl', 'Name'), iname), h('div.grow', h('label.lbl', 'Expression'), expr), h('div.grow', h('label.lbl', 'From'), from)),
    h('div.hint', 'A member path of the FROM iterator, as in Geode. The planner uses it for =, ranges, IN SET and LIKE \'abc%\'.'),
    h('div', add)), (done) => [h('button', { onclick: () => done(null) }, 'Close')], { wide: true });
}

