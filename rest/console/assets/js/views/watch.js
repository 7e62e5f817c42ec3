// Watch: a region's changes, or a continuous query's, live
// (GET /kv/v1/watch). The stream is read with fetch (api.openStream),
// because EventSource cannot send the user's credentials; a stream that
// drops resumes after its last event ID, as EventSource would.

import { openStream, readEvents } from '../api.js';
import { h, fill, fmtTime, showError } from '../dom.js';
import { loadRegions } from './regions.js';

const maxRows = 500; // the table keeps the newest rows only

export function mount(main, arg) {
  const region = h('select#watch-region', h('option', { value: '' }, '—'));
  const oql = h('input#watch-query', { type: 'text', placeholder: 'or a continuous query: SELECT * FROM /orders o WHERE o.total > 10', autocomplete: 'off' });
  const initial = h('input#watch-initial', { type: 'checkbox' });
  const start = h('button.primary#watch-start', { type: 'submit' }, 'Watch');
  const stop = h('button#watch-stop', { type: 'button', disabled: true, onclick: () => halt('stopped') }, 'Stop');
  const state = h('span.badge#watch-state', 'idle');
  const err = h('div#watch-error');
  const rows = h('tbody#watch-rows');
  let ctl = null; // the AbortController of the running watch

  fill(main,
    h('div.page-head', h('h1', 'Watch'), h('span.sub', 'changes as they happen: create, update, destroy, expire, clear')),
    h('div.panel', h('div.body', h('form.row', { onsubmit: (e) => { e.preventDefault(); begin(); } },
      h('div', h('label.lbl', { for: 'watch-region' }, 'Region'), region),
      h('div.grow', h('label.lbl', { for: 'watch-query' }, 'Query'), oql),
      h('label', initial, ' current entries first'),
      h('div', h('label.lbl', '\u00a0'), h('div.row', start, stop, state))), err)),
    h('div.panel', h('table.grid#watch-table',
      h('thead', h('tr', h('th', 'Type'), h('th', 'Key'), h('th', 'Value'), h('th', 'Time'))), rows)));

  loadRegions().then((list) => {
    for (const r of list) region.append(h('option', { value: r.name, selected: r.name === arg }, r.name));
  }).catch((e) => showError(err, e));

  function setState(text, kind) {
    state.className = 'badge ' + (kind || '');
    state.textContent = text;
  }

  function halt(text) {
    if (ctl) ctl.abort();
    ctl = null;
    start.disabled = false;
    stop.disabled = true;
    setState(text);
  }

  async function begin() {
    halt('connecting…');
    showError(err, null);
    fill(rows);
    const query = {};
    if (region.value) query.region = region.value;
    if (oql.value.trim()) query.q = oql.value.trim();
    if (initial.checked) query.initial = 'true';
    const mine = new AbortController();
    ctl = mine;
    start.disabled = true;
    stop.disabled = false;
    let lastId = '';
    let delay = 0;
    while (ctl === mine) {
      try {
        const resp = await openStream('/kv/v1/watch', query, lastId, mine.signal);
        let ended = false;
        await readEvents(resp.body, (ev) => {
          const d = JSON.parse(ev.data);
          if (ev.type === 'ready') { delete query.initial; setState('live', 'green'); delay = 0; return; }
          if (ev.type === 'error') { setState('resuming: ' + d.cause, 'amber'); return; }
          if (ev.type === 'end') { ended = true; halt('ended'); showError(err, { message: d.cause }); return; }
          add(ev.type, d);
        }, (id) => { if (!query.initial) lastId = id; });
        if (ended || ctl !== mine) return;
      } catch (e) {
        if (ctl !== mine) return;
        if (e.status && e.status !== 503) { halt('error'); setState('error', 'red'); showError(err, e); return; }
        setState('reconnecting…', 'amber');
      }
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(Math.max(2 * delay, 250), 5000);
    }
  }

  function add(type, d) {
    const value = d.value === undefined ? '' : JSON.stringify(d.value);
    rows.prepend(h('tr', { dataset: { type } }, h('td', h('span.badge', { class: type === 'destroy' || type === 'expire' ? 'red' : 'blue' }, type)),
      h('td.mono', d.key === undefined ? '—' : d.key), h('td.mono', value), h('td', fmtTime(new Date()))));
    while (rows.children.length > maxRows) rows.lastChild.remove();
  }

  return () => halt('stopped');
}
