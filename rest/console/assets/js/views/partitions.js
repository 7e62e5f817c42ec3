// Partitions: the partition groups (how many, which buckets each owns,
// their leaders), growing them and starting a rebalance, and the
// rebalance operations with their progress, live. Everything comes from
// the management API: GET /management/v1/partitions, PATCH it with
// {"groups": N}, POST and GET /management/v1/operations/rebalances.
// All of it needs CLUSTER:MANAGE; a user without it is shown the 403 and
// its cause, and no form.

import { call, getJSON } from '../api.js';
import { h, fill, fmtInt, fmtTime, errorBox, showError, toast, busy, empty, spinner } from '../dom.js';

const OPERATIONS = '/management/v1/operations/rebalances';
// Polling: fast while an operation runs, slower otherwise.
const FAST_MS = 1000;
const SLOW_MS = 3000;
const MAX_GROUPS = 113;
const COLORS = 8; // .bk.c0 ... .bk.c7

export function mount(main) {
  const cards = h('div.cards#partition-cards');
  const groupsBox = h('div.body.flush#partition-groups');
  const mapBox = h('div.body#bucket-map');
  const formBox = h('div.body#rebalance-form');
  const liveBox = h('div#rebalance-live');
  const opsBox = h('div.body.flush#operations');
  const updated = h('span.sub#partitions-updated');
  const refresh = h('button.small', { onclick: () => poll(true) }, 'Refresh');
  fill(main,
    h('div.page-head', h('h1', 'Partitions and rebalance'), updated, h('div.grow'), refresh),
    cards,
    liveBox,
    h('div.split',
      h('div.panel', h('div.head', h('h2', 'Partition groups'), h('span.sub.muted', 'the buckets each group owns, and its leader')), groupsBox),
      h('div.panel', h('div.head', h('h2', 'Grow and rebalance')), formBox)),
    h('div.panel', h('div.head', h('h2', 'Bucket owners'), h('span.sub.muted', 'the 113 buckets of partitioned regions, coloured by the group that owns each')), mapBox),
    h('div.panel', h('div.head', h('h2', 'Rebalance operations'), h('span.sub.muted', 'newest first; kept in the control group, so any member answers')), opsBox));

  const st = { parts: null, partsErr: null, ops: null, opsErr: null, updated: null, follow: null };
  let timer = null;
  let stopped = false;
  let inFlight = false;
  // The form is built once, so that what the user typed survives the
  // refreshes.
  const form = buildForm();

  async function poll(now) {
    if (stopped || inFlight) return;
    if (!now && document.visibilityState !== 'visible') return schedule();
    inFlight = true;
    try {
      const [parts, ops] = await Promise.all([settle(getJSON('/management/v1/partitions')), settle(getJSON(OPERATIONS))]);
      [st.parts, st.partsErr] = parts;
      st.ops = ops[0] ? (ops[0].result || []).slice().reverse() : null;
      st.opsErr = ops[1];
      st.updated = new Date();
      if (!stopped) render();
    } finally {
      inFlight = false;
      schedule();
    }
  }

  function running() {
    return (st.ops || []).some((op) => op.operationStatus === 'IN_PROGRESS') ||
      (st.follow && !(st.ops || []).some((op) => op.operationId === st.follow));
  }

  function schedule() {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(() => poll(false), running() ? FAST_MS : SLOW_MS);
  }

  function render() {
    updated.textContent = st.updated ? `Updated ${fmtTime(st.updated)} · every ${(running() ? FAST_MS : SLOW_MS) / 1000} s` : '';
    const forbidden = [st.partsErr, st.opsErr].find((e) => e && e.status === 403);
    if (forbidden) {
      fill(cards);
      fill(liveBox, h('div.alert.error.page-alert#partitions-forbidden', { role: 'alert', dataset: { status: '403' } },
        h('div.title', 'Forbidden: partition groups and rebalance need CLUSTER:MANAGE'),
        h('div.cause', forbidden.cause),
        h('div.meta', `${forbidden.status} · ${forbidden.method} ${forbidden.path}`)));
      for (const box of [groupsBox, mapBox, opsBox]) fill(box, empty('Not shown', 'This needs CLUSTER:MANAGE.'));
      fill(formBox, h('span.faint', 'Growing the groups and starting a rebalance need CLUSTER:MANAGE.'));
      return;
    }
    renderCards();
    renderLive();
    renderGroups();
    renderMap();
    form.update();
    renderOps();
  }

  function renderCards() {
    const out = [];
    const p = st.parts;
    if (p) {
      const counts = p.groups.map((g) => g.buckets.length);
      const led = p.groups.filter((g) => g.leader).length;
      out.push(stat('Partition groups', String(p.partitionGroups), `RF ${p.replicationFactor} · ${led} of ${p.groups.length} with a leader`, led === p.groups.length ? 'ok' : 'warn'));
      const lo = counts.length ? Math.min(...counts) : 0;
      const hi = counts.length ? Math.max(...counts) : 0;
      out.push(stat('Buckets per group', lo === hi ? String(lo) : `${lo}–${hi}`, `${p.buckets} buckets in all`, hi - lo <= 1 ? 'ok' : 'warn'));
    }
    if (st.ops) {
      const run = st.ops.find((op) => op.operationStatus === 'IN_PROGRESS');
      const last = st.ops[0];
      out.push(stat('Rebalance', run ? 'in progress' : last ? last.operationStatus : 'never run',
        run ? `${plural(run.result.bucketTransfersCompleted, 'bucket', 'buckets')} moved so far` : last ? `last ended ${last.operationEnd ? fmtTime(new Date(last.operationEnd)) : '—'}` : 'no operation recorded',
        run ? 'warn' : !last || last.operationStatus === 'SUCCESS' ? 'ok' : 'bad'));
    }
    fill(cards, out);
  }

  // renderLive shows the running operation (or the one just started) in
  // large: what has moved so far and for how long.
  function renderLive() {
    const ops = st.ops || [];
    const op = ops.find((o) => o.operationStatus === 'IN_PROGRESS') || (st.follow ? ops.find((o) => o.operationId === st.follow) : null);
    if (!op) {
      fill(liveBox);
      return;
    }
    const r = op.result;
    const done = op.operationStatus !== 'IN_PROGRESS';
    fill(liveBox, h('div.panel.live', { dataset: { operation: op.operationId, status: op.operationStatus } },
      h('div.head', h('h2', done ? 'Rebalance finished' : 'Rebalance running'), statusBadge(op.operationStatus),
        h('span.mono.muted', op.operationId), h('div.grow'),
        done ? h('button.small#live-dismiss', { onclick: () => { st.follow = null; render(); } }, 'Dismiss') : null),
      h('div.body', h('div.cards',
        stat('Buckets moved', fmtInt(r.bucketTransfersCompleted), done ? 'in all' : 'so far'),
        stat('Data moved', fmtBytes(r.bucketTransferBytes), plural(sum(r.rebalanceRegionResults, 'entriesMoved'), 'entry', 'entries')),
        stat('Leaderships moved', fmtInt(r.primaryTransfersCompleted), 'groups whose leader changed'),
        stat('Duration', fmtDuration(duration(op)), `started ${fmtTime(new Date(op.operationStart))}${op.operationEnd ? ` · ended ${fmtTime(new Date(op.operationEnd))}` : ''}`)),
      r.statusMessage ? h('div.hint#live-message', r.statusMessage) : null)));
  }

  function renderGroups() {
    if (st.partsErr) {
      fill(groupsBox, h('div.body', errorBox(st.partsErr)));
      return;
    }
    if (!st.parts) {
      fill(groupsBox, empty('Loading…', ''));
      return;
    }
    const p = st.parts;
    if (!p.groups.length) {
      fill(groupsBox, empty('No partition groups', 'The partition table is not created yet.'));
      return;
    }
    fill(groupsBox, h('div.table-scroll', h('table.grid#partition-groups-table',
      h('thead', h('tr', h('th', 'Group'), h('th', 'Leader'), h('th.num', 'Buckets'), h('th', 'Share'), h('th', 'Which'), h('th', 'Members'))),
      h('tbody', p.groups.map((g) => h('tr', { dataset: { group: String(g.group), buckets: String(g.buckets.length) } },
        h('td', h('div.row', h('span.bk', { class: `c${g.group % COLORS}`, 'aria-hidden': 'true' }), h('b', String(g.group)))),
        h('td', g.leader ? h('div.row', h('span.dot.ok'), g.leader) : h('div.row', h('span.dot.bad'), h('span', 'none'))),
        h('td.num', String(g.buckets.length)),
        h('td', h('progress', { max: String(p.buckets), value: String(g.buckets.length), title: `${g.buckets.length} of ${p.buckets}` })),
        h('td.mono.muted', { title: g.buckets.join(', ') }, ranges(g.buckets)),
        h('td', g.members.length ? g.members.join(', ') : h('span.faint', '—'))))))));
  }

  function renderMap() {
    if (!st.parts) {
      fill(mapBox, st.partsErr ? null : empty('Loading…', ''));
      return;
    }
    const owner = new Array(st.parts.buckets).fill(0);
    for (const g of st.parts.groups) for (const b of g.buckets) owner[b] = g.group;
    fill(mapBox,
      h('div.bucket-map', owner.map((g, b) => h('span.bk', { class: g ? `c${g % COLORS}` : 'none', title: `bucket ${b} → ${g ? `group ${g}` : 'no group'}`, dataset: { bucket: String(b), group: String(g) } }))),
      h('div.legend', st.parts.groups.map((g) => h('span.row', h('span.bk', { class: `c${g.group % COLORS}` }), `group ${g.group}`))));
  }

  function buildForm() {
    const err = h('div#rebalance-error');
    // No min or max: a count the API refuses (fewer groups than there
    // are, more than 113) is sent, and its 400 says why.
    const wanted = h('input#groups-wanted', { type: 'number', step: '1', required: true });
    const grow = h('button.primary#grow-groups', { type: 'submit' }, 'Add groups and rebalance');
    const rebalance = h('button#start-rebalance', { type: 'button' }, 'Rebalance now');
    let touched = false;
    wanted.addEventListener('input', () => { touched = true; });
    const formEl = h('form', {
      onsubmit: async (e) => {
        e.preventDefault();
        showError(err, null);
        const n = Number(wanted.value);
        await start(grow, () => call('PATCH', '/management/v1/partitions', { json: { groups: n } }), `growing to ${n} groups`);
        touched = false;
      },
    },
    h('div.row',
      h('div', h('label.lbl', { for: 'groups-wanted' }, 'Partition groups wanted'), wanted),
      h('div', h('label.lbl', '\u00a0'), grow),
      h('div', h('label.lbl', '\u00a0'), rebalance)),
    h('div.hint', 'Groups are added, never removed (at most 113, one bucket each). Buckets then move into the new groups while the cluster serves: writes to a moving bucket pause for about 0.1 s, reads go on. "Rebalance now" evens out the buckets over the groups there are.'),
    err);
    rebalance.addEventListener('click', () => {
      showError(err, null);
      start(rebalance, () => call('POST', OPERATIONS), 'rebalance');
    });

    async function start(button, send, what) {
      try {
        const resp = await busy(button, send());
        const doc = JSON.parse(resp.text);
        st.follow = doc.operationId;
        toast(`Rebalance ${doc.operationId} started (${what})`);
        poll(true);
      } catch (e2) {
        showError(err, e2);
      }
    }

    return {
      update() {
        if (!formBox.contains(formEl)) fill(formBox, formEl);
        if (st.parts) {
          const cur = st.parts.partitionGroups;
          if (!touched || !wanted.value) wanted.value = String(Math.min(MAX_GROUPS, cur + 1));
        }
      },
    };
  }

  function renderOps() {
    if (st.opsErr) {
      fill(opsBox, h('div.body', errorBox(st.opsErr)));
      return;
    }
    if (!st.ops) {
      fill(opsBox, empty('Loading…', ''));
      return;
    }
    if (!st.ops.length) {
      fill(opsBox, empty('No rebalance yet', 'Add groups or start one above; kvnode also starts one on its own when the buckets are uneven (--auto-rebalance).'));
      return;
    }
    fill(opsBox, h('div.table-scroll', h('table.grid#operations-table',
      h('thead', h('tr', ['Operation', 'Status', 'Buckets moved', 'Data moved', 'Leaderships moved', 'Started', 'Ended', 'Duration', 'Result']
        .map((t) => h('th', { class: /moved|Duration/.test(t) ? 'num' : '' }, t)))),
      h('tbody', st.ops.map((op) => {
        const r = op.result;
        return h('tr', { dataset: { operation: op.operationId, status: op.operationStatus } },
          h('td', h('div.mono', op.operationId), r.partitionGroups ? h('div.faint', `grow to ${r.partitionGroups} groups`) : null),
          h('td', statusBadge(op.operationStatus)),
          h('td.num.moved-buckets', fmtInt(r.bucketTransfersCompleted)),
          h('td.num', fmtBytes(r.bucketTransferBytes)),
          h('td.num', fmtInt(r.primaryTransfersCompleted)),
          h('td.nowrap', { title: op.operationStart }, fmtTime(new Date(op.operationStart))),
          h('td.nowrap', { title: op.operationEnd || '' }, op.operationEnd ? fmtTime(new Date(op.operationEnd)) : h('span.faint', '—')),
          h('td.num', fmtDuration(duration(op))),
          h('td', h('div', r.statusMessage || ''), (r.rebalanceRegionResults || []).map((x) =>
            h('div.faint', `${x.regionName}: ${fmtInt(x.bucketTransfersCompleted)} buckets, ${fmtInt(x.entriesMoved)} entries, ${fmtBytes(x.bucketTransferBytes)}`))));
      })))));
  }

  poll(true);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

async function settle(p) {
  try {
    return [await p, null];
  } catch (e) {
    return [null, e];
  }
}

function stat(label, value, detail, dot) {
  return h('div.stat', h('div.label', label),
    h('div.value', dot !== undefined ? h('span.dot', { class: dot }) : null, value),
    h('div.detail', { title: detail || '' }, detail || '\u00a0'));
}

function statusBadge(s) {
  const cls = { IN_PROGRESS: 'blue', SUCCESS: 'green', ERROR: 'red' }[s] || '';
  return h('span.badge.op-status', { class: cls }, s === 'IN_PROGRESS' ? [spinner(), ' IN_PROGRESS'] : s);
}

function plural(n, one, many) {
  return `${fmtInt(n)} ${n === 1 ? one : many}`;
}

function sum(list, field) {
  return (list || []).reduce((n, x) => n + (typeof x[field] === 'number' ? x[field] : 0), 0);
}

// duration is how long an operation ran (or has run so far), in ms.
function duration(op) {
  const start = Date.parse(op.operationStart);
  const end = op.operationEnd ? Date.parse(op.operationEnd) : Date.now();
  return Number.isFinite(start) && Number.isFinite(end) ? Math.max(0, end - start) : null;
}

export function fmtDuration(ms) {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60000);
  return `${m} min ${Math.round((ms % 60000) / 1000)} s`;
}

export function fmtBytes(n) {
  if (typeof n !== 'number') return '—';
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = -1;
  do {
    v /= 1024;
    u++;
  } while (v >= 1024 && u < units.length - 1);
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

// ranges writes sorted bucket numbers compactly: 0, 4, 8–11, 20.
export function ranges(bs) {
  const s = bs.slice().sort((a, b) => a - b);
  const out = [];
  for (let i = 0; i < s.length;) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j] + 1) j++;
    out.push(j > i ? `${s[i]}–${s[j]}` : String(s[i]));
    i = j + 1;
  }
  return out.join(', ') || '—';
}
