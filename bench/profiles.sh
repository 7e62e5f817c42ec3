#!/usr/bin/env bash
# profiles.sh — CPU and block profiles of the leader under each workload of
# bench/compare.sh, and the top of each.
#
#   bench/profiles.sh [out-dir]
#
# Starts 3 members on 127.0.0.1 (REST 18081-18083, debug listeners
# 16061-16063 via --pprof-addr) and, for each workload, runs the shared load
# generator for DUR (default 8s) while taking a CPU profile and a block
# profile (delta over the same window) from the control group's leader,
# which leads group 0 where the replicated region lives. The profiles are
# kept in out-dir (default a temp dir) for `go tool pprof`; the script prints
# the five heaviest functions of each (flat CPU, cumulative delay).
#
# Needs ../shared/bench/loadgen (or SHARED=...). Traffic goes to 127.0.0.1
# only, every load is bounded by DUR; only the processes this script
# started are signalled.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SHARED:-$(cd "$ROOT/../shared/bench" 2>/dev/null && pwd || true)}
[[ -n "$SHARED" && -d "$SHARED/loadgen" ]] || { echo "shared bench dir not found; set SHARED=/path/to/shared/bench" >&2; exit 1; }
DUR=${DUR:-8s}
OUTDIR=${1:-$(mktemp -d "${TMPDIR:-/tmp}/kvnode-profiles.XXXXXX")}
mkdir -p "$OUTDIR"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kvnode-prof.XXXXXX")
PIDS=()
JOIN=127.0.0.1:17951,127.0.0.1:17952,127.0.0.1:17953
EP=http://127.0.0.1:18081,http://127.0.0.1:18082,http://127.0.0.1:18083
cleanup() {
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

(cd "$ROOT" && CGO_ENABLED=0 go build -o "$WORK/kvnode" ./cmd/kvnode)
(cd "$SHARED/loadgen" && go build -o "$WORK/loadgen" .)
for i in 1 2 3; do
  "$WORK/kvnode" --name "pf$i" --data-dir "$WORK/n$i" \
    --http-addr "127.0.0.1:1808$i" --internal-addr "127.0.0.1:1707$i" --gossip-addr "127.0.0.1:1795$i" \
    --pprof-addr "127.0.0.1:1606$i" --join "$JOIN" --bootstrap-expect 3 \
    --regions orders:REPLICATE,events:PARTITION --log-level warn >"$WORK/n$i.log" 2>&1 &
  PIDS+=("$!")
done
for _ in $(seq 1 300); do
  ok=0
  for i in 1 2 3; do [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:1808$i/readyz")" == 200 ]] && ok=$((ok + 1)); done
  ((ok == 3)) && break
  sleep 0.2
done
((ok == 3)) || { echo "cluster did not come up" >&2; exit 1; }
sleep 2
leader=$(curl -s http://127.0.0.1:18081/management/v1/cluster | python3 -c 'import json,sys; print(json.load(sys.stdin)["leader"])')
li=${leader#pf}
echo "profiles of $leader (leader of group 0) in $OUTDIR"
secs=${DUR%s}

profile() { # profile NAME loadgen-args...
  local name=$1; shift
  curl -s "http://127.0.0.1:1606$li/debug/pprof/profile?seconds=$((secs - 1))" >"$OUTDIR/$name.cpu.pb.gz" &
  local cpu=$!
  curl -s "http://127.0.0.1:1606$li/debug/pprof/block?seconds=$((secs - 1))" >"$OUTDIR/$name.block.pb.gz" &
  local blk=$!
  "$WORK/loadgen" -target kv -endpoints "$EP" -keys 1000 -d "$DUR" "$@" | grep -E '^\s+(put|get|create) ' | sed "s/^ */$name: /"
  wait "$cpu" "$blk"
  echo "  CPU (flat):"
  go tool pprof -top -nodecount=5 "$OUTDIR/$name.cpu.pb.gz" 2>/dev/null | awk '/flat%/ {on=1; next} on {printf "    %s %s  %s\n", $1, $2, $6}'
  echo "  blocked (cumulative):"
  go tool pprof -top -cum -nodecount=8 "$OUTDIR/$name.block.pb.gz" 2>/dev/null | awk '/flat%/ {on=1; next} on && $6 !~ /^runtime\./ {printf "    %s  %s\n", $4, $6}' | head -5
}
"$WORK/loadgen" -target kv -region orders -endpoints "$EP" -keys 1000 -d 1s -op put -c 4 >/dev/null
"$WORK/loadgen" -target kv -region events -endpoints "$EP" -keys 1000 -d 1s -op put -c 4 >/dev/null
profile put-c1 -region orders -op put -c 1 -preload=false
profile put-c64 -region orders -op put -c 64 -preload=false
profile put-c256 -region orders -op put -c 256 -preload=false
profile get-lin-c64 -region orders -op get -c 64 -preload=false
profile get-stale-c64 -region orders -op get -c 64 -preload=false -serializable
profile create-c16 -region orders -op create -c 16
profile put-c64-partitioned -region events -op put -c 64 -preload=false
