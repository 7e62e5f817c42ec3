// The live picture of the cluster, polled from the API every few seconds
// while the tab is visible: readiness (/readyz), members and the control
// group (/management/v1/cluster), partition groups (/management/v1/
// partitions), and, for users without CLUSTER:MANAGE, the live members'
// REST URLs (/kv/v1/servers, CLUSTER:READ).

import { call, getJSON } from './api.js';

export const INTERVAL_MS = 3000;

export const state = {
  ready: null, // {ok, cause}
  cluster: null, clusterErr: null,
  partitions: null, partitionsErr: null,
  servers: null, serversErr: null,
  updated: null,
  paused: false,
};

const subscribers = new Set();
let timer = null;
let running = false;

export function subscribe(f) {
  subscribers.add(f);
  f(state);
  return () => subscribers.delete(f);
}

function publish() {
  for (const f of subscribers) f(state);
}

async function settle(p) {
  try {
    return [await p, null];
  } catch (e) {
    return [null, e];
  }
}

// refresh reads everything once, in parallel.
export async function refresh() {
  if (running) return;
  running = true;
  try {
    const [ready, cluster, partitions] = await Promise.all([
      settle(call('GET', '/readyz', { auth: false })),
      settle(getJSON('/management/v1/cluster')),
      settle(getJSON('/management/v1/partitions')),
    ]);
    state.ready = ready[1] ? { ok: false, cause: ready[1].cause, err: ready[1] } : { ok: true };
    [state.cluster, state.clusterErr] = cluster;
    [state.partitions, state.partitionsErr] = partitions;
    if (state.clusterErr && state.clusterErr.status === 403) {
      [state.servers, state.serversErr] = await settle(getJSON('/kv/v1/servers'));
    }
    state.updated = new Date();
    publish();
  } finally {
    running = false;
  }
}

export function start() {
  stop();
  refresh();
  timer = setInterval(() => {
    if (!state.paused && document.visibilityState === 'visible') refresh();
  }, INTERVAL_MS);
}

export function stop() {
  if (timer) clearInterval(timer);
  timer = null;
  Object.assign(state, { ready: null, cluster: null, clusterErr: null, partitions: null, partitionsErr: null, servers: null, serversErr: null, updated: null });
}

export function setPaused(p) {
  state.paused = p;
  publish();
}

// summary is the few words of the top bar: health, leader, members.
export function summary(s) {
  if (!s.ready) return { level: '', text: 'Connecting…' };
  const parts = [];
  let level = s.ready.ok ? 'ok' : 'bad';
  parts.push(s.ready.ok ? 'Ready' : 'Not ready');
  if (s.cluster) {
    const alive = s.cluster.members.filter((m) => m.status === 'alive').length;
    parts.push(s.cluster.leader ? `leader ${s.cluster.leader}` : 'no leader');
    parts.push(`${alive}/${s.cluster.members.length} members alive`);
    if (!s.cluster.leader) level = 'bad';
    else if (alive < s.cluster.members.length && level === 'ok') level = 'warn';
  } else if (s.servers) {
    parts.push(`${s.servers.length} members`);
  }
  return { level, text: parts.join(' · ') };
}
