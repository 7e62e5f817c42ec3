#!/usr/bin/env bash
# restart.sh — how long a kvnode cluster takes to serve again after kill -9
# of every member, with a million entries only in the log, and how fast an
# unindexed COUNT over them runs. One round of bench/ab.sh's "restart"
# benchmark; also usable alone.
#
#   bench/restart.sh [results.txt]
#
# Starts 3 members on 127.0.0.1 (REST 18181-18183) with a replicated region
# `orders`, loads N entries (default 1,000,000) of VALUE bytes (default 200)
# by multi-key PUTs of BATCH keys (default 500) from CLIENTS clients
# (default 4): that is N/BATCH log entries, far below the snapshot
# threshold, so the data is in the log only. Then kill -9 of all three right
# after the load was acknowledged, start again, and the time until each
# member answers a linearizable GET of a loaded key with 200; then an OQL
# COUNT with a predicate and no index, 10 times (after one to warm up).
#
# LOGLEVEL=info (default warn) is the members' --log-level; LOGS=dir keeps
# their logs there (on failure their tails are printed either way).
#
# PROFILE=dir: the members serve Go's profiles (--pprof-addr
# 127.0.0.1:18191-18193) and a CPU profile of r1 from its restart on, for
# PROFILE_SECONDS (default 12), goes to dir/restart-r1.cpu.pprof.
#
# KVNODE=path uses that kvnode binary instead of building this checkout's
# (bench/ab.sh builds two; LABEL names it in the output); KVBENCH likewise. Besides the human lines it
# prints "metric NAME VALUE" lines for ab.sh: load_entries_per_sec,
# restart_ms (the slowest member), count_p50_ms.
#
# Every load is bounded (N keys, --duration); traffic goes to 127.0.0.1
# only; only the processes this script started are signalled, by PID.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-/dev/null}
N=${N:-1000000}
VALUE=${VALUE:-200}
BATCH=${BATCH:-500}
CLIENTS=${CLIENTS:-4}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kvnode-restart.XXXXXX")
PIDS=(0 0 0)
JOIN=127.0.0.1:18951,127.0.0.1:18952,127.0.0.1:18953
EP=http://127.0.0.1:18181,http://127.0.0.1:18182,http://127.0.0.1:18183

say() { echo "$*" | tee -a "$OUT"; }

# shellcheck source=bench/procs.sh
. "$ROOT/bench/procs.sh"
cleanup() {
  local rc=$?
  stop_pids "${PIDS[@]}"
  if [[ -n ${LOGS:-} ]]; then mkdir -p "$LOGS" && cp "$WORK"/*.log "$LOGS"/; fi
  if ((rc != 0)); then
    tail_logs "$WORK"/*.log
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

start() {
  local i=$1
  "$KVNODE" --name "r$i" --data-dir "$WORK/n$i" \
    --http-addr "127.0.0.1:1818$i" --internal-addr "127.0.0.1:1817$i" --gossip-addr "127.0.0.1:1895$i" \
    --join "$JOIN" --bootstrap-expect 3 --regions orders:REPLICATE --log-level "${LOGLEVEL:-warn}" --max-body-size 64MiB \
    ${PROFILE:+--pprof-addr "127.0.0.1:1819$i"} >>"$WORK/n$i.log" 2>&1 &
  PIDS[i - 1]=$!
}
now_ms() { date +%s%3N; }

bench_bins "$WORK"
say "restart.sh, $(date -u +%Y-%m-%dT%H:%MZ), ${LABEL:-commit $(git -C "$ROOT" rev-parse --short HEAD)}, $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"

for i in 1 2 3; do start "$i"; done
wait_ready ${EP//,/ }

"$KVBENCH" --endpoints "$EP" --workload load --keys "$N" --batch "$BATCH" -c "$CLIENTS" \
  --value-size "$VALUE" --preload=false --duration 10m --quiet --json >"$WORK/load.json"
python3 - "$WORK/load.json" "$N" <<'EOF' | tee -a "$OUT"
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
n = int(sys.argv[2])
if r["errors"] or r["ok"] * r["batch"] < n:
    sys.exit(f"load failed: {r['ok']} ok, {r['errors']} errors {r.get('errors_by_kind')}")
print(f"bulk load: {n:,} entries, {r['batch']} per PUT, {r['concurrency']} clients: {r['seconds']:.1f} s, {r['entries_per_sec']:,.0f} entries/s")
print(f"metric load_entries_per_sec {r['entries_per_sec']:.0f}")
EOF

kill_pids "${PIDS[@]}"
t0=$(now_ms)
for i in 1 2 3; do start "$i"; done
if [[ -n ${PROFILE:-} ]]; then
  mkdir -p "$PROFILE"
  for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:18191/debug/pprof/" && break; sleep 0.02; done
  curl -s -o "$PROFILE/restart-r1.cpu.pprof" "http://127.0.0.1:18191/debug/pprof/profile?seconds=${PROFILE_SECONDS:-12}" &
  profiling=$!
fi
last=$((N - 1))
keylen=$(( ${#last} > 8 ? ${#last} : 8 ))
key=kvbench-$(printf "%0${keylen}d" $((N / 2)))
served=(0 0 0)
deadline=$((t0 + 120000))
while (( served[0] == 0 || served[1] == 0 || served[2] == 0 )); do
  for i in 1 2 3; do
    if (( served[i - 1] == 0 )) && [[ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:1818$i/kv/v1/orders/$key")" == 200 ]]; then
      served[i - 1]=$(( $(now_ms) - t0 ))
    fi
  done
  (( $(now_ms) < deadline )) || { say "not every member served within 120 s: ${served[*]} ms"; exit 1; }
  sleep 0.05
done
slowest=$(printf '%s\n' "${served[@]}" | sort -n | tail -1)
say "restart after kill -9 of all 3, data in the log only: GET $key 200 after ${served[0]} / ${served[1]} / ${served[2]} ms"
say "metric restart_ms $slowest"

Q='SELECT COUNT(*) FROM /orders o WHERE o.totalPrice > 500'
total=$(curl -s -G "http://127.0.0.1:18181/kv/v1/queries/adhoc" --data-urlencode 'q=SELECT COUNT(*) FROM /orders')
[[ "$total" == *"$N"* ]] || { say "expected $N entries after the restart, COUNT(*) says $total"; exit 1; }
curl -s -o /dev/null -G "http://127.0.0.1:18181/kv/v1/queries/adhoc" --data-urlencode "q=$Q"
times=()
for _ in $(seq 1 10); do
  times+=("$(curl -s -o /dev/null -w '%{time_total}' -G "http://127.0.0.1:18181/kv/v1/queries/adhoc" --data-urlencode "q=$Q")")
done
p50=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.0f", a[int((NR+1)/2)]*1000}')
say "OQL '$Q': p50 $p50 ms over 10 runs"
say "metric count_p50_ms $p50"
[[ -z ${PROFILE:-} ]] || wait "$profiling" # the CPU profile
