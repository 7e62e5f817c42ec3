#!/usr/bin/env bash
# bigdata.sh — kvnode with a million entries: bulk load, memory, snapshot,
# restart after kill -9, and an unindexed OQL COUNT.
#
#   bench/bigdata.sh [results.txt]
#
# Starts 3 members on 127.0.0.1 (REST 18081-18083) with a replicated region
# `orders`, and measures:
#   1. bulk load: kvbench --workload load, N keys (default 1,000,000) of
#      VALUE bytes (default 200) in multi-key PUTs of BATCH keys: entries/s;
#   2. resident memory (VmRSS) of each member after the load, against the raw
#      data (keys + values);
#   3. an OQL COUNT with a predicate and no index, 20 times: p50 and max;
#   4. snapshot: the members run with --snapshot-threshold 64 and
#      --snapshot-interval 2s (a bulk load is ~N/BATCH log entries, far below
#      the default threshold); from 3 s after the load, small writes to
#      region marks (also in group 0, so after the load in its log) go on
#      until every member holds a snapshot of group 0 (which holds
#      replicated regions) taken after that moment, read from the
#      snapshot's directory name (term-index-milliseconds);
#   5. kill -9 of all three members, start again: time until each member
#      answers a linearizable GET of a loaded key with 200, and the COUNT(*)
#      of the region (it must be N);
#   6. resident memory after the restart, once the members have served.
#
# LOGLEVEL=info (default warn) is the members' --log-level; LOGS=dir keeps
# their logs there.
#
# PROFILE=dir: the members serve Go's profiles (--pprof-addr
# 127.0.0.1:18091-18093) and a CPU profile of big1 from its restart (step 5)
# on, for PROFILE_SECONDS (default 6), goes to dir/restart-big1.cpu.pprof.
#
# Every load is bounded (N keys, --duration); traffic goes to 127.0.0.1 only;
# only the processes this script started are signalled, by PID.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-/dev/null}
N=${N:-1000000}
VALUE=${VALUE:-200}
BATCH=${BATCH:-1000}
CLIENTS=${CLIENTS:-4}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kvnode-bigdata.XXXXXX")
PIDS=(0 0 0)
JOIN=127.0.0.1:17951,127.0.0.1:17952,127.0.0.1:17953
EP=http://127.0.0.1:18081,http://127.0.0.1:18082,http://127.0.0.1:18083

say() { echo "$*" | tee -a "$OUT"; }

stop_all() {
  local sig=$1
  for pid in "${PIDS[@]}"; do
    ((pid > 0)) && kill -0 "$pid" 2>/dev/null && kill "-$sig" "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    ((pid > 0)) || continue
    for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  done
}
cleanup() {
  local rc=$?
  stop_all TERM
  if ((rc != 0)); then
    for i in 1 2 3; do echo "--- big$i log (last 15 lines)"; tail -15 "$WORK/n$i.log"; done >&2
  fi
  if [[ -n ${LOGS:-} ]]; then mkdir -p "$LOGS" && cp "$WORK"/*.log "$LOGS"/; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

start() {
  local i=$1
  "$WORK/kvnode" --name "big$i" --data-dir "$WORK/n$i" \
    --http-addr "127.0.0.1:1808$i" --internal-addr "127.0.0.1:1707$i" --gossip-addr "127.0.0.1:1795$i" \
    --join "$JOIN" --bootstrap-expect 3 --regions orders:REPLICATE,marks:REPLICATE --log-level "${LOGLEVEL:-warn}" \
    --snapshot-threshold 64 --snapshot-interval 2s --max-body-size 64MiB \
    ${PROFILE:+--pprof-addr "127.0.0.1:1809$i"} >>"$WORK/n$i.log" 2>&1 &
  PIDS[i - 1]=$!
}

rss_mib() { awk '/VmRSS/ {printf "%.0f", $2/1024}' "/proc/$1/status"; }
now_ms() { date +%s%3N; }

# The newest snapshot of any group on a member, as the milliseconds in its
# directory name (replicated regions live in group 0, with the catalog).
newest_snapshot_ms() {
  local dir=$1 best=0 name ms
  for snap in "$dir"/raft/g0/snapshots/*/; do
    [[ -d "$snap" ]] || continue
    name=$(basename "$snap")
    [[ "$name" == *.tmp ]] && continue
    ms=${name##*-}
    ((ms > best)) && best=$ms
  done
  echo "$best"
}

count_query() {
  curl -s -G "http://127.0.0.1:1808$1/kv/v1/queries/adhoc" --data-urlencode "q=$2"
}

say "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
say "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
(cd "$ROOT" && CGO_ENABLED=0 go build -o "$WORK/kvnode" ./cmd/kvnode && go build -o "$WORK/kvbench" ./cmd/kvbench)

for i in 1 2 3; do start "$i"; done
for _ in $(seq 1 300); do
  ok=0
  for i in 1 2 3; do
    [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:1808$i/readyz")" == 200 ]] && ok=$((ok + 1))
  done
  ((ok == 3)) && break
  sleep 0.2
done
((ok == 3)) || { say "cluster did not come up"; exit 1; }

# 1. Bulk load.
"$WORK/kvbench" --endpoints "$EP" --workload load --keys "$N" --batch "$BATCH" -c "$CLIENTS" \
  --value-size "$VALUE" --preload=false --duration 10m --quiet --json >"$WORK/load.json"
loaded_ms=$(now_ms)
python3 - "$WORK/load.json" "$N" <<'EOF' | tee -a "$OUT"
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
n = int(sys.argv[2])
if r["errors"] or r["ok"] * r["batch"] < n:
    sys.exit(f"load failed: {r['ok']} ok, {r['errors']} errors {r.get('errors_by_kind')}")
print(f"bulk load: {n:,} entries of {r['value_bytes']} bytes, {r['batch']} per PUT, {r['concurrency']} clients: "
      f"{r['seconds']:.1f} s, {r['entries_per_sec']:,.0f} entries/s (p50 {r['latency_ms']['p50']:.0f} ms, p99 {r['latency_ms']['p99']:.0f} ms per PUT)")
EOF
# kvbench names key i kvbench-%08d (wider when N needs it).
last=$((N - 1))
keylen=$(( ${#last} > 8 ? ${#last} : 8 ))
raw=$(( N * (VALUE + 8 + keylen) ))
say "raw data: $((raw / 1048576)) MiB (keys kvbench-NNN of $((8 + keylen)) bytes + $VALUE-byte values)"
sleep 3
line="RSS after load:"
for i in 1 2 3; do
  r=$(rss_mib "${PIDS[i - 1]}")
  line+=" big$i $r MiB ($(python3 -c "print(f'{$r*1048576/$raw:.2f}')")x)"
done
say "$line"

# 3. COUNT with a predicate, no index.
Q='SELECT COUNT(*) FROM /orders o WHERE o.totalPrice > 500'
count_query 1 "$Q" >/dev/null
times=()
for _ in $(seq 1 20); do
  t=$(curl -s -o /dev/null -w '%{time_total}' -G "http://127.0.0.1:18081/kv/v1/queries/adhoc" --data-urlencode "q=$Q")
  times+=("$t")
done
say "OQL '$Q' ($(count_query 1 "$Q")): $(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "p50 %.0f ms, max %.0f ms over %d runs", a[int((NR+1)/2)]*1000, a[NR]*1000, NR}')"

# 4. A snapshot that holds the whole load. Raft snapshots a group once
# --snapshot-threshold entries follow its last snapshot, checked every
# --snapshot-interval; the load's last entries may be fewer than that. So,
# from 3 s after the load was acknowledged (the followers have applied it),
# small writes to another replicated region (group 0 too, after the load in
# the log) go on until every member holds a snapshot of group 0 taken after
# that moment: it covers the load.
sleep 3
since=$(now_ms)
deadline=$((since + 120000))
m=0
snapped() { for i in 1 2 3; do (( $(newest_snapshot_ms "$WORK/n$i") > since )) || return 1; done; }
until snapped; do
  (( $(now_ms) < deadline )) || { say "no snapshot after the load on every member within 120 s ($m marker writes)"; exit 1; }
  for _ in $(seq 1 16); do
    m=$((m + 1))
    curl -s -o /dev/null -f -X PUT -H 'Content-Type: application/json' -d "{\"m\":$m}" "http://127.0.0.1:18081/kv/v1/marks/m$m" ||
      { say "marker write $m failed"; exit 1; }
  done
  sleep 0.5
done
say "snapshots of group 0 after the load (term-index-ms): $(for i in 1 2 3; do ls -d "$WORK/n$i"/raft/g0/snapshots/*/ | tail -1 | xargs basename; done | tr '\n' ' ')"

# 5. kill -9 everything, restart, time to the first linearizable read.
stop_all KILL
t0=$(now_ms)
for i in 1 2 3; do start "$i"; done
if [[ -n ${PROFILE:-} ]]; then
  mkdir -p "$PROFILE"
  for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:18091/debug/pprof/" && break; sleep 0.02; done
  curl -s -o "$PROFILE/restart-big1.cpu.pprof" "http://127.0.0.1:18091/debug/pprof/profile?seconds=${PROFILE_SECONDS:-6}" &
  profiling=$!
fi
key=kvbench-$(printf "%0${keylen}d" $((N / 2)))
served=(0 0 0)
deadline=$((t0 + 60000))
while (( ${served[0]} == 0 || ${served[1]} == 0 || ${served[2]} == 0 )); do
  for i in 1 2 3; do
    if (( ${served[i - 1]} == 0 )) && [[ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:1808$i/kv/v1/orders/$key")" == 200 ]]; then
      served[i - 1]=$(( $(now_ms) - t0 ))
    fi
  done
  (( $(now_ms) < deadline )) || { say "not every member served within 60 s: ${served[*]} ms"; exit 1; }
  sleep 0.05
done
say "restart after kill -9 of all 3: GET $key 200 after ${served[0]} / ${served[1]} / ${served[2]} ms (big1/big2/big3)"
total=$(count_query 1 'SELECT COUNT(*) FROM /orders')
say "COUNT(*) after the restart: $total"
[[ "$total" == *"$N"* ]] || { say "expected $N entries after the restart"; exit 1; }
sleep 5
line="RSS after restart:"
for i in 1 2 3; do
  r=$(rss_mib "${PIDS[i - 1]}")
  line+=" big$i $r MiB ($(python3 -c "print(f'{$r*1048576/$raw:.2f}')")x)"
done
say "$line"
[[ -z ${PROFILE:-} ]] || wait "$profiling" # the CPU profile
