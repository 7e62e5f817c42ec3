#!/usr/bin/env bash
# breakdown.sh — where one write's time goes, and how often members fsync.
#
#   bench/breakdown.sh [results.txt]
#
# Starts 3 members on 127.0.0.1 (REST 18081-18083) with a replicated region
# orders and a partitioned region events, then:
#   1. one client puts to the control group's leader (which leads group 0,
#      where replicated regions live) for DUR, and again through a follower
#      (which forwards to the leader); kvbench gives the client's latency,
#      the members' /metrics (scraped before and after) the mean of each
#      stage: the HTTP handler, the Raft log write (append + fdatasync), the
#      commit (append to applied on the leader: replication round trip and
#      the quorum's fsync), and the state machine's apply;
#   2. 64 clients put to the replicated region, then to the partitioned
#      one, for DUR each, while perf counts each member's fdatasync/fsync
#      calls and /metrics its Raft log writes (all groups): syncs and log
#      writes per second per member against client writes per second.
#
# Step 2 needs perf (or strace). Traffic goes to 127.0.0.1 only, every load is
# bounded by DUR; only the processes this script started are signalled.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-/dev/null}
DUR=${DUR:-10s}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kvnode-breakdown.XXXXXX")
PIDS=()
JOIN=127.0.0.1:17951,127.0.0.1:17952,127.0.0.1:17953

say() { echo "$*" | tee -a "$OUT"; }
cleanup() {
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

say "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
(cd "$ROOT" && CGO_ENABLED=0 go build -o "$WORK/kvnode" ./cmd/kvnode && go build -o "$WORK/kvbench" ./cmd/kvbench)
for i in 1 2 3; do
  "$WORK/kvnode" --name "bd$i" --data-dir "$WORK/n$i" \
    --http-addr "127.0.0.1:1808$i" --internal-addr "127.0.0.1:1707$i" --gossip-addr "127.0.0.1:1795$i" \
    --join "$JOIN" --bootstrap-expect 3 --regions orders:REPLICATE,events:PARTITION --log-level warn \
    >"$WORK/n$i.log" 2>&1 &
  PIDS+=("$!")
done
for _ in $(seq 1 300); do
  ok=0
  for i in 1 2 3; do [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:1808$i/readyz")" == 200 ]] && ok=$((ok + 1)); done
  ((ok == 3)) && break
  sleep 0.2
done
((ok == 3)) || { say "cluster did not come up"; exit 1; }
sleep 2 # let leadership settle (leaders are spread after start)

leader=$(curl -s http://127.0.0.1:18081/management/v1/cluster | python3 -c 'import json,sys; print(json.load(sys.stdin)["leader"])')
li=${leader#bd}
fi=$((li % 3 + 1))
say "group 0 leader: $leader; follower used: bd$fi"

scrape() { curl -s "http://127.0.0.1:1808$1/metrics" >"$2"; }

# stage_means BEFORE AFTER: mean of each histogram over the run, group 0.
stage_means() {
  python3 - "$1" "$2" <<'EOF'
import re, sys
def load(path):
    vals = {}
    for line in open(path):
        m = re.match(r'^(kvnode_[a-z_]+)_(sum|count)\{([^}]*)\} (\S+)$', line)
        if m:
            vals[(m.group(1), m.group(2), m.group(3))] = float(m.group(4))
    return vals
a, b = load(sys.argv[1]), load(sys.argv[2])
def mean(name, want):
    s = c = 0.0
    for (n, kind, labels), v in b.items():
        if n != name or not all(w in labels for w in want):
            continue
        d = v - a.get((n, kind, labels), 0.0)
        if kind == "sum": s += d
        else: c += d
    return (s / c * 1000, int(c)) if c else (float("nan"), 0)
rows = [
    ("HTTP handler (PUT entry)", "kvnode_http_request_duration_seconds", ['method="PUT"']),
    ("Raft log write: append + fdatasync", "kvnode_raft_log_store_duration_seconds", ['group="0"']),
    ("commit: append to applied (leader)", "kvnode_raft_commit_duration_seconds", ['group="0"']),
    ("state machine apply (one batch)", "kvnode_raft_apply_duration_seconds", ['group="0"']),
]
for label, name, want in rows:
    ms, n = mean(name, want)
    print(f"    {label:<38} {ms:7.3f} ms mean over {n}")
EOF
}

put_c1() {
  local ep=$1 name=$2
  scrape "$li" "$WORK/l0"; scrape "$fi" "$WORK/f0"
  "$WORK/kvbench" --endpoints "http://127.0.0.1:1808$ep" --workload put -c 1 --keys 1000 --preload=false --duration "$DUR" --quiet --json >"$WORK/c1.json"
  scrape "$li" "$WORK/l1"; scrape "$fi" "$WORK/f1"
  python3 - "$WORK/c1.json" "$name" <<'EOF' | tee -a "$OUT"
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
l = r["latency_ms"]
print(f"put, 1 client, {sys.argv[2]}: {r['ops_per_sec']:.0f}/s, client latency p50 {l['p50']:.3f} ms, p99 {l['p99']:.3f} ms")
EOF
  say "  leader's stages:"
  stage_means "$WORK/l0" "$WORK/l1" | tee -a "$OUT"
  if [[ $ep != "$li" ]]; then
    say "  follower's (the HTTP handler includes the forward to the leader):"
    stage_means "$WORK/f0" "$WORK/f1" | tee -a "$OUT"
  fi
}
put_c1 "$li" "to the leader"
put_c1 "$fi" "through a follower"

# 2. fsyncs per second under partitioned load, counted by the kernel's
# syscall tracepoints (perf stat; strace -c when perf cannot).
secs=${DUR%s}
COUNTERS=()
count_syncs() { # count_syncs i: starts a counter on member i for secs+1 s
  local pid=${PIDS[$1 - 1]}
  if perf stat -e syscalls:sys_enter_fdatasync true >/dev/null 2>&1; then
    perf stat -x, -e syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync -p "$pid" -o "$WORK/sync$1" -- sleep "$((secs + 1))" &
    COUNTERS+=("$!")
  else
    timeout -s INT "$((secs + 1))" strace -f -c -e trace=fdatasync,fsync -p "$pid" -o "$WORK/strace$1" &
    COUNTERS+=("$!")
  fi
}
syncs() { # syncs i: fdatasync + fsync calls counted for member i
  if [[ -s "$WORK/sync$1" ]]; then
    awk -F, '/sys_enter_f(data)?sync/ {s += $1} END {print s + 0}' "$WORK/sync$1"
  else
    awk '$NF == "fdatasync" || $NF == "fsync" {s += $4} END {print s + 0}' "$WORK/strace$1"
  fi
}
# log_writes BEFORE AFTER: Raft log writes (all groups) between two scrapes.
log_writes() {
  python3 - "$1" "$2" <<'EOF'
import re, sys
def total(path):
    return sum(float(m.group(1)) for line in open(path)
               if (m := re.match(r'^kvnode_raft_log_store_duration_seconds_count\{[^}]*\} (\S+)$', line)))
print(int(total(sys.argv[2]) - total(sys.argv[1])))
EOF
}
for reg in orders events; do
  COUNTERS=()
  for i in 1 2 3; do count_syncs "$i"; scrape "$i" "$WORK/m$i-0"; done
  sleep 0.5
  "$WORK/kvbench" --endpoints http://127.0.0.1:18081,http://127.0.0.1:18082,http://127.0.0.1:18083 --region "$reg" \
    --workload put -c 64 --keys 1000 --preload=false --duration "$DUR" --quiet --json >"$WORK/p64.json"
  for i in 1 2 3; do scrape "$i" "$WORK/m$i-1"; done
  for pid in "${COUNTERS[@]}"; do wait "$pid" || true; done
  rate=$(python3 -c "import json; r=json.loads(open('$WORK/p64.json').read().splitlines()[-1]); print(f\"{r['ops_per_sec']:.0f}\")")
  say "put to $reg, 64 clients: $rate writes/s; per member, fdatasync+fsync/s and Raft log writes/s (all groups):"
  for i in 1 2 3; do
    say "    bd$i $(python3 -c "print(f'{$(syncs "$i")/($secs+1):.0f} syncs/s, {$(log_writes "$WORK/m$i-0" "$WORK/m$i-1")/$secs:.0f} log writes/s')")"
  done
done
