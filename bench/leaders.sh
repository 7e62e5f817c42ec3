#!/usr/bin/env bash
# leaders.sh — do leaderships follow members? (issue 29's target: once a
# cluster has at least as many partition groups as members, every member
# leads at least one group within 30 s of the last join, and the leaders
# stay even, most minus fewest ≤ 1, after any member restarts.)
#
#   bench/leaders.sh [results.txt]
#
# Three members start with --partition-groups auto (one group per member,
# grown as members join) and a PARTITION region takes a light write load
# (so that moves carry data); three more join, one at a time 2 s apart.
# Every second it prints how many groups each member leads (the control
# group counts too, as group 0); it reports the time from the last join's
# readiness to every member leading a partition group, then restarts
# members (SIGTERM and start again; then SIGKILL and start again) and
# reports the spread of leaderships 30 s after each.
#
# Traffic goes to 127.0.0.1 only; loops are bounded; only the processes
# this script started are signalled, by PID.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-/dev/null}
N=${N:-6}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kvnode-leaders.XXXXXX")
declare -A PID
say() { echo "$*" | tee -a "$OUT"; }
# shellcheck source=bench/procs.sh
. "$ROOT/bench/procs.sh"
cleanup() {
  stop_pids "${PID[@]}"
  rm -rf "$WORK"
}
trap cleanup EXIT

(cd "$ROOT" && CGO_ENABLED=0 go build -o "$WORK/kvnode" ./cmd/kvnode)
say "leaders.sh, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo '+changes')"
say "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"

join=$(for i in $(seq 1 "$N"); do printf '127.0.0.1:%d,' $((19700 + i)); done); join=${join%,}
start() {
  local i=$1
  "$WORK/kvnode" --name "l$i" --data-dir "$WORK/d$i" --http-addr "127.0.0.1:$((19600 + i))" \
    --internal-addr "127.0.0.1:$((19650 + i))" --gossip-addr "127.0.0.1:$((19700 + i))" \
    --join "$join" --bootstrap-expect 3 --partition-groups auto --log-level warn >>"$WORK/l$i.log" 2>&1 &
  PID[$i]=$!
}
ready() {
  for _ in $(seq 1 300); do
    [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((19600 + $1))/readyz")" == 200 ]] && return 0
    sleep 0.2
  done
  echo "member $1 did not get ready" >&2
  return 1
}
# counts: "groups leaders-per-member... spread partition-leaders-min" from
# the partitions view and the cluster view of any member that answers.
counts() {
  local i
  for i in $(seq 1 "$N"); do
    [[ -n ${PID[$i]:-} ]] || continue
    if curl -sf -m 2 "http://127.0.0.1:$((19600 + i))/management/v1/partitions" >"$WORK/p.json" 2>/dev/null &&
      curl -sf -m 2 "http://127.0.0.1:$((19600 + i))/management/v1/cluster" >"$WORK/c.json" 2>/dev/null; then
      python3 - "$WORK/p.json" "$WORK/c.json" "${!PID[@]}" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2]))
members = sorted("l" + i for i in sys.argv[3:])
lead = {m: 0 for m in members}
for g in p["groups"]:
    if g.get("leader") in lead:
        lead[g["leader"]] += 1
part = dict(lead)
if c.get("leader") in lead:
    lead[c["leader"]] += 1
print(p["partitionGroups"], " ".join(f"{m}:{lead[m]}" for m in members), max(lead.values()) - min(lead.values()), min(part.values()))
PY
      return 0
    fi
  done
  echo "? no member answered"
}

for i in 1 2 3; do start "$i"; done
for i in 1 2 3; do ready "$i"; done
curl -sf -XPOST -H 'Content-Type: application/json' -d '{"name":"lt","type":"PARTITION"}' http://127.0.0.1:19601/management/v1/regions >/dev/null
# A light load: 20 writes a second over 2,000 keys, bounded by the run.
(for n in $(seq 1 6000); do
  curl -s -o /dev/null -m 5 -XPUT -H 'Content-Type: application/json' -d "{\"n\":$n}" "http://127.0.0.1:$((19601 + n % 3))/kv/v1/lt/k$((n % 2000))" || true
  sleep 0.05
done) &
LOAD=$!
say "3 members: $(counts)"
for i in $(seq 4 "$N"); do start "$i"; sleep 2; done
for i in $(seq 4 "$N"); do ready "$i"; done
t0=$(date +%s.%N)
say "all $N members ready; every second: groups, leaderships per member (control group included), most-fewest, fewest partition-group leaderships"
allAt=""
for _ in $(seq 1 90); do
  c=$(counts)
  el=$(python3 -c "print(f'{$(date +%s.%N)-$t0:.1f}')")
  say "  +${el}s $c"
  if [[ -z $allAt && ${c##* } =~ ^[1-9] ]]; then
    allAt=$el
  fi
  [[ -n $allAt ]] && python3 -c "import sys; sys.exit(0 if $el >= 30 else 1)" && break
  sleep 1
done
say "every member leads a partition group: ${allAt:-not within 90 s} s after the last join was ready"

restart() {
  local i=$1 sig=$2
  kill -"$sig" "${PID[$i]}" 2>/dev/null || true
  for _ in $(seq 1 200); do kill -0 "${PID[$i]}" 2>/dev/null || break; sleep 0.1; done
  start "$i"
  ready "$i"
  say "restarted l$i after SIG$sig; leaderships 30 s later:"
  for s in 10 20 30; do sleep 10; say "  +${s}s $(counts)"; done
}
restart 1 TERM
restart 2 KILL
kill "$LOAD" 2>/dev/null || true
