// Overview: health, members, the control group and every partition group
// with its leader, and the regions with their sizes; refreshed live.

import { h, fill, fmtInt, fmtTime, errorBox, empty } from '../dom.js';
import * as status from '../status.js';
import { loadRegions } from './regions.js';

const statusDot = { alive: 'ok', suspect: 'warn', dead: 'bad', left: '' };

export function mount(main) {
  const cards = h('div.cards#overview-cards');
  const members = h('div.body.flush#members');
  const groups = h('div.body.flush#groups');
  const regionsBox = h('div.body.flush#overview-regions');
  const updated = h('span.sub#updated');
  const pause = h('button.small', { onclick: () => status.setPaused(!status.state.paused) });
  const refresh = h('button.small', { onclick: () => { status.refresh(); loadSizes(); } }, 'Refresh');
  fill(main,
    h('div.page-head', h('h1', 'Cluster overview'), updated, h('div.grow'), pause, refresh),
    cards,
    h('div.panel', h('div.head', h('h2', 'Members'), h('span.sub.muted', 'gossip status and Raft suffrage in the control group')), members),
    h('div.panel', h('div.head', h('h2', 'Raft groups'), h('span.sub.muted', 'the control group and every partition group, with its leader'), h('div.grow'), h('a', { href: '#/partitions' }, 'Partitions and rebalance →')), groups),
    h('div.panel', h('div.head', h('h2', 'Regions'), h('div.grow'), h('a', { href: '#/regions' }, 'Manage regions →')), regionsBox));

  let regionList = null;
  let regionErr = null;
  let sizesAt = 0;
  let loading = false;
  async function loadSizes() {
    if (loading) return;
    loading = true;
    try {
      regionList = await loadRegions();
      regionErr = null;
    } catch (e) {
      regionErr = e;
    } finally {
      loading = false;
    }
    sizesAt = Date.now();
    render(status.state);
  }

  function render(s) {
    pause.textContent = s.paused ? 'Resume live updates' : 'Pause';
    updated.textContent = s.updated ? `Updated ${fmtTime(s.updated)}${s.paused ? ' · paused' : ` · every ${status.INTERVAL_MS / 1000} s`}` : '';
    renderCards(cards, s, regionList);
    renderMembers(members, s);
    renderGroups(groups, s);
    renderRegions(regionsBox, regionList, regionErr);
    // Region sizes cost a request per region: every third refresh.
    if (s.updated && Date.now() - sizesAt > 3 * status.INTERVAL_MS - 500) loadSizes();
  }
  loadSizes();
  return status.subscribe(render);
}

function stat(label, value, detail, dot) {
  return h('div.stat', h('div.label', label),
    h('div.value', dot !== undefined ? h('span.dot', { class: dot }) : null, value),
    h('div.detail', { title: detail || '' }, detail || '\u00a0'));
}

function renderCards(box, s, regionList) {
  const out = [];
  if (!s.ready) {
    fill(box, stat('Health', '…', 'connecting'));
    return;
  }
  out.push(stat('Health', s.ready.ok ? 'Ready' : 'Not ready', s.ready.ok ? 'joined and caught up' : s.ready.cause, s.ready.ok ? 'ok' : 'bad'));
  if (s.cluster) {
    const alive = s.cluster.members.filter((m) => m.status === 'alive').length;
    const voters = s.cluster.members.filter((m) => m.suffrage === 'voter').length;
    out.push(stat('Control group', s.cluster.leader || 'no leader', `leader · term ${s.cluster.term} · ${voters} voter${voters === 1 ? '' : 's'}`, s.cluster.leader ? 'ok' : 'bad'));
    out.push(stat('Members', `${alive} / ${s.cluster.members.length}`, 'alive / known', alive === s.cluster.members.length ? 'ok' : 'warn'));
  } else if (s.servers) {
    out.push(stat('Members', String(s.servers.length), 'live members (/kv/v1/servers)'));
  }
  if (s.partitions) {
    const led = s.partitions.groups.filter((g) => g.leader).length;
    out.push(stat('Partition groups', `${led} / ${s.partitions.groups.length}`,
      `with a leader · RF ${s.partitions.replicationFactor} · ${s.partitions.buckets} buckets`,
      s.partitions.groups.length === 0 ? '' : led === s.partitions.groups.length ? 'ok' : 'warn'));
  }
  if (regionList) {
    const total = regionList.reduce((n, r) => n + (typeof r.entries === 'number' ? r.entries : 0), 0);
    out.push(stat('Regions', String(regionList.length), `${fmtInt(total)} entries in all`));
  }
  fill(box, out);
}

function forbidden(e, what) {
  if (e.status === 403) {
    return h('div.alert.info', h('div.title', `${what} needs CLUSTER:MANAGE`), h('div.cause', e.cause));
  }
  return errorBox(e);
}

// link shows a member's REST URL, as a link only when it is http(s).
function link(u) {
  if (!u) return '—';
  return /^https?:\/\//.test(u) ? h('a.mono', { href: u, target: '_blank', rel: 'noopener' }, u) : h('span.mono', u);
}

function renderMembers(box, s) {
  if (s.clusterErr) {
    const wrap = [h('div', { class: 'body' }, forbidden(s.clusterErr, 'The member table'))];
    if (s.servers) {
      wrap.push(table(['REST URL'], s.servers.map((u) => h('tr', h('td', link(u))))));
    }
    fill(box, wrap);
    return;
  }
  if (!s.cluster) {
    fill(box, empty('Loading…', ''));
    return;
  }
  const rows = s.cluster.members.map((m) => h('tr', { dataset: { member: m.name } },
    h('td', h('div.row', h('b', m.name), m.name === s.cluster.leader ? h('span.badge.blue', 'leader') : null)),
    h('td', h('div.row', h('span.dot', { class: statusDot[m.status] || '' }), m.status)),
    h('td', raftCell(m)),
    h('td', link(m.restUrl)),
    h('td.mono', m.internalAddr || '—'),
    h('td.mono', m.gossipAddr || '—'),
    h('td', m.groups.length ? m.groups.map((g) => h('span.badge', g)) : h('span.faint', '—')),
    h('td.mono', m.version || '—')));
  fill(box, table(['Name', 'Status', 'Raft', 'REST URL', 'Internal', 'Gossip', 'Member groups', 'Version'], rows, 'members-table'));
}

// raftCell is a member's place in the control group; a member that has
// not proved its identity over the internal port (refused, or not yet
// verified) says so, with the reason on hover: it is in no Raft group.
function raftCell(m) {
  if (m.identity === 'refused' || m.identity === 'unverified') {
    return h('div.row', h('span.badge', { class: m.identity === 'refused' ? 'red' : 'amber', title: m.reason || '' }, m.identity),
      h('span.faint', m.reason || ''));
  }
  if (m.suffrage) {
    return h('span.badge', { class: m.suffrage === 'voter' ? 'green' : '' }, m.suffrage);
  }
  return h('span.faint', 'not in the group');
}

function renderGroups(box, s) {
  const rows = [];
  if (s.cluster) {
    const voters = s.cluster.members.filter((m) => m.suffrage === 'voter').map((m) => m.name);
    const non = s.cluster.members.filter((m) => m.suffrage === 'nonvoter').map((m) => m.name);
    rows.push(groupRow('0 · control', s.cluster.leader, s.cluster.term, null, voters, non, 'regions, definitions, the partition table'));
  }
  if (s.partitions) {
    for (const g of s.partitions.groups) {
      rows.push(groupRow(String(g.group), g.leader, g.term, g.appliedIndex, g.voters, g.nonVoters, `${g.buckets.length} buckets`));
    }
  }
  if (s.partitionsErr && s.clusterErr) {
    fill(box, h('div.body', forbidden(s.partitionsErr, 'The Raft groups')));
    return;
  }
  if (!rows.length) {
    fill(box, empty('Loading…', ''));
    return;
  }
  const out = [table(['Group', 'Leader', 'Term', 'Applied index', 'Voters', 'Non-voters', 'Holds'], rows, 'groups-table')];
  if (s.partitionsErr) out.push(h('div.body', errorBox(s.partitionsErr)));
  fill(box, out);
}

function groupRow(name, leader, term, applied, voters, non, holds) {
  return h('tr', { dataset: { group: name } },
    h('td', h('b', name)),
    h('td', leader ? h('div.row', h('span.dot.ok'), leader) : h('div.row', h('span.dot.bad'), h('span', 'none'))),
    h('td.num', term === undefined || term === null ? '—' : String(term)),
    h('td.num', applied === null || applied === undefined ? '—' : fmtInt(applied)),
    h('td', voters.length ? voters.join(', ') : '—'),
    h('td', non.length ? non.join(', ') : h('span.faint', '—')),
    h('td.muted', holds));
}

function renderRegions(box, list, err) {
  if (err) {
    fill(box, h('div.body', errorBox(err)));
    return;
  }
  if (!list) {
    fill(box, empty('Loading…', ''));
    return;
  }
  if (!list.length) {
    fill(box, empty('No regions yet', h('a', { href: '#/regions' }, 'Create one')));
    return;
  }
  fill(box, table(['Region', 'Type', 'Entries'], list.map((r) => h('tr',
    h('td', h('a', { href: `#/data/${encodeURIComponent(r.name)}` }, r.name)),
    h('td', h('span.badge', { class: r.type === 'PARTITION' ? 'blue' : '' }, r.type)),
    h('td.num', typeof r.entries === 'number' ? fmtInt(r.entries) : h('span.faint', { title: r.sizeError || '' }, '—')))), 'overview-regions-table'));
}

export function table(headers, rows, id) {
  return h('div.table-scroll', h('table.grid', id ? { id } : null,
    h('thead', h('tr', headers.map((t) => h('th', { class: /^(Entries|Term|Applied index)$/.test(t) ? 'num' : '' }, t)))),
    h('tbody', rows)));
}
