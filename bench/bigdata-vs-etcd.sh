#!/usr/bin/env bash
# bigdata-vs-etcd.sh — a million entries in kvnode and in etcd 3.6, the
# same keys and values, in one run: bulk load, resident memory after the
# load and after a restart, and the time from kill -9 of every member to the
# first linearizable read, with the data only in the log and with it in a
# snapshot (issue 30).
#
#   bench/bigdata-vs-etcd.sh [results.txt]
#
# For each system, two fresh 3-member clusters on 127.0.0.1, one at a time:
#   log       default flags (kvnode: its snapshot threshold is far above the
#             ~N/500 entries of the load; etcd: --snapshot-count 10000,
#             above the ~N/128 transactions of its load);
#   snapshot  kvnode --snapshot-threshold 64 --snapshot-interval 2s, and
#             small writes after the load until every member has a snapshot
#             of group 0 taken after it (as bench/bigdata.sh does); etcd
#             --snapshot-count 1000 (it snapshots while loading; the last
#             <1000 transactions stay in its WAL).
# Each cluster: load N keys (default 1,000,000) of VALUE bytes (default 200)
# with CLIENTS clients (default 4): kvnode by multi-key PUTs of 500 keys
# (kvbench --workload load), etcd by transactions of 128 puts, its default
# limit (kvbench-etcd --target etcd-grpc --workload load); etcd's keys are
# "orders/<key>". Then VmRSS of each member, kill -9 of all three, start
# again, and the time until each member answers a linearizable read of a
# loaded key (kvnode: GET /kv/v1/orders/k; etcd: a range through its JSON
# gateway, linearizable by default) with the entry; VmRSS again 5 s later.
# The table at the end puts the two side by side, with ratios.
#
# Every load is bounded (N keys, --duration); traffic goes to 127.0.0.1
# only; only the processes this script started are signalled, by PID.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-/dev/null}
N=${N:-1000000}
VALUE=${VALUE:-200}
CLIENTS=${CLIENTS:-4}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kvnode-bigetcd.XXXXXX")
PIDS=(0 0 0)
RESULTS=$WORK/results.txt

say() { echo "$*" | tee -a "$OUT"; }
# shellcheck source=bench/procs.sh
. "$ROOT/bench/procs.sh"
cleanup() {
  local rc=$?
  stop_pids "${PIDS[@]}"
  if ((rc != 0)); then
    tail_logs "$WORK"/*.log
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

rss_mib() { awk '/VmRSS/ {printf "%.0f", $2/1024}' "/proc/$1/status"; }
now_ms() { date +%s%3N; }
rss_all() { local i out=""; for i in 0 1 2; do out+="$(rss_mib "${PIDS[i]}") "; done; echo "${out% }"; }

bench_bins "$WORK"
(cd "$ROOT/bench/etcd36" && CGO_ENABLED=0 go build -o "$WORK/etcd" ./cmd/etcd && go build -o "$WORK/kvbench-etcd" ./cmd/kvbench-etcd)
say "bigdata-vs-etcd.sh, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD || echo '+changes'), $("$WORK/etcd" --version | awk '/etcd Version/ {print "etcd " $3}')"
say "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); N=$N, values of $VALUE bytes, $CLIENTS clients"

last=$((N - 1))
keylen=$(( ${#last} > 8 ? ${#last} : 8 ))
key=kvbench-$(printf "%0${keylen}d" $((N / 2)))

# --- kvnode ---
KEP=http://127.0.0.1:18481,http://127.0.0.1:18482,http://127.0.0.1:18483
kv_start() { # kv_start I MODE
  local i=$1 extra=()
  [[ $2 == snapshot ]] && extra=(--snapshot-threshold 64 --snapshot-interval 2s)
  "$KVNODE" --name "k$i" --data-dir "$WORK/kv-$2-$i" --http-addr "127.0.0.1:1848$i" \
    --internal-addr "127.0.0.1:1847$i" --gossip-addr "127.0.0.1:1898$i" \
    --join 127.0.0.1:18981,127.0.0.1:18982,127.0.0.1:18983 --bootstrap-expect 3 \
    --regions orders:REPLICATE,marks:REPLICATE --log-level warn --max-body-size 64MiB "${extra[@]}" \
    >>"$WORK/kv-$2-$i.log" 2>&1 &
  PIDS[i - 1]=$!
}
kv_served() { [[ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:1848$1/kv/v1/orders/$key")" == 200 ]]; }
newest_snapshot_ms() {
  local best=0 snap name ms
  for snap in "$1"/raft/g0/snapshots/*/; do
    [[ -d $snap ]] || continue
    name=$(basename "$snap")
    [[ $name == *.tmp ]] && continue
    ms=${name##*-}
    ((ms > best)) && best=$ms
  done
  echo "$best"
}
kv_snapshot() { # small writes until every member has a snapshot of group 0 taken after now
  local since m=0 i ok
  since=$(now_ms)
  for _ in $(seq 1 240); do
    ok=1
    for i in 1 2 3; do (( $(newest_snapshot_ms "$WORK/kv-snapshot-$i") > since )) || ok=0; done
    ((ok)) && return 0
    for _ in $(seq 1 16); do
      m=$((m + 1))
      curl -s -o /dev/null -f -X PUT -H 'Content-Type: application/json' -d "{\"m\":$m}" "http://127.0.0.1:18481/kv/v1/marks/m$m"
    done
    sleep 0.5
  done
  say "kvnode: no snapshot after the load on every member within 120 s"
  return 1
}

# --- etcd ---
EEP=http://127.0.0.1:23891,http://127.0.0.1:23892,http://127.0.0.1:23893
etcd_start() { # etcd_start I MODE
  local i=$1 count=10000 cluster=e1=http://127.0.0.1:23991,e2=http://127.0.0.1:23992,e3=http://127.0.0.1:23993 state=new
  [[ $2 == snapshot ]] && count=1000
  [[ -d "$WORK/etcd-$2-$i" ]] && state=existing
  "$WORK/etcd" --name "e$i" --data-dir "$WORK/etcd-$2-$i" \
    --listen-client-urls "http://127.0.0.1:2389$i" --advertise-client-urls "http://127.0.0.1:2389$i" \
    --listen-peer-urls "http://127.0.0.1:2399$i" --initial-advertise-peer-urls "http://127.0.0.1:2399$i" \
    --initial-cluster "$cluster" --initial-cluster-state "$state" --initial-cluster-token "bigdata-$2-$$" \
    --snapshot-count "$count" --quota-backend-bytes $((8 << 30)) --log-level warn >>"$WORK/etcd-$2-$i.log" 2>&1 &
  PIDS[i - 1]=$!
}
etcd_served() {
  local k
  k=$(printf '%s' "orders/$key" | base64 -w0)
  curl -s -m 2 -X POST -d "{\"key\":\"$k\"}" "http://127.0.0.1:2389$1/v3/kv/range" 2>/dev/null | grep -q '"kvs"'
}
etcd_ready() { # every member healthy
  local i ok
  for _ in $(seq 1 300); do
    ok=0
    for i in 1 2 3; do curl -s -m 2 "http://127.0.0.1:2389$i/health" | grep -q '"health":"true"' && ok=$((ok + 1)); done
    ((ok == 3)) && return 0
    sleep 0.2
  done
  say "etcd did not come up"
  return 1
}

# run SYSTEM MODE: one cluster's load, memory, restart and memory.
run() {
  local sys=$1 mode=$2 i load t0 served=(0 0 0) deadline
  for i in 1 2 3; do "${sys}_start" "$i" "$mode"; done
  if [[ $sys == kv ]]; then
    wait_ready ${KEP//,/ }
    "$KVBENCH" --endpoints "$KEP" --region orders --workload load --keys "$N" --batch 500 -c "$CLIENTS" \
      --value-size "$VALUE" --preload=false --duration 10m --quiet --json >"$WORK/load.json"
  else
    etcd_ready
    "$WORK/kvbench-etcd" --target etcd-grpc --endpoints "$EEP" --region orders --workload load --keys "$N" \
      --batch 128 -c "$CLIENTS" --value-size "$VALUE" --preload=false --duration 10m --quiet --json >"$WORK/load.json"
  fi
  load=$(python3 - "$WORK/load.json" "$N" <<'EOF'
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
if r["errors"] or r["ok"] * r["batch"] < int(sys.argv[2]):
    sys.exit(f"load failed: {r['ok']} ok, {r['errors']} errors {r.get('errors_by_kind')}")
print(f"{r['entries_per_sec']:.0f}")
EOF
)
  [[ $sys == kv && $mode == snapshot ]] && kv_snapshot
  sleep 3
  local rss1
  rss1=$(rss_all)
  kill_pids "${PIDS[@]}"
  t0=$(now_ms)
  for i in 1 2 3; do "${sys}_start" "$i" "$mode"; done
  deadline=$((t0 + 180000))
  while ((served[0] == 0 || served[1] == 0 || served[2] == 0)); do
    for i in 1 2 3; do
      if ((served[i - 1] == 0)) && "${sys}_served" "$i"; then served[i - 1]=$(($(now_ms) - t0)); fi
    done
    (($(now_ms) < deadline)) || { say "$sys $mode: not every member served within 180 s: ${served[*]}"; return 1; }
    sleep 0.05
  done
  sleep 5
  local rss2
  rss2=$(rss_all)
  say "$sys $mode: load $load entries/s; RSS after load $rss1 MiB; first read after kill -9 ${served[*]} ms; RSS after restart $rss2 MiB"
  echo "$sys $mode $load ${served[*]} $rss1 $rss2" >>"$RESULTS"
  stop_pids "${PIDS[@]}"
  PIDS=(0 0 0)
}

run kv log
run etcd log
run kv snapshot
run etcd snapshot

python3 - "$RESULTS" <<'EOF' | tee -a "$OUT"
import sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    sys_, mode = f[0], f[1]
    v = list(map(float, f[2:]))
    rows[(sys_, mode)] = {"load": v[0], "read": max(v[1:4]), "reads": v[1:4], "rss1": v[4:7], "rss2": v[7:10]}
def rng(xs, fmt="{:.0f}"):
    return f"{fmt.format(min(xs))}-{fmt.format(max(xs))}"
print("\n| | kvnode | etcd 3.6 | kvnode / etcd |\n|---|---|---|---|")
for mode in ("log", "snapshot"):
    k, e = rows.get(("kv", mode)), rows.get(("etcd", mode))
    if not k or not e:
        continue
    print(f"| bulk load ({mode} run), entries/s | {k['load']:,.0f} | {e['load']:,.0f} | {k['load'] / e['load']:.1f}x |")
    print(f"| resident after loading ({mode} run), MiB per member | {rng(k['rss1'])} | {rng(e['rss1'])} | {max(k['rss1']) / max(e['rss1']):.2f}x |")
    print(f"| first linearizable read after kill -9, data in the {mode}, slowest member | {k['read'] / 1000:.1f} s | {e['read'] / 1000:.1f} s | {k['read'] / e['read']:.2f}x |")
    print(f"| resident after the restart ({mode} run), MiB per member | {rng(k['rss2'])} | {rng(e['rss2'])} | {max(k['rss2']) / max(e['rss2']):.2f}x |")
EOF
