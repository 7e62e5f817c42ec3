#!/usr/bin/env bash
# profiles.sh — CPU and block profiles of the leader under each workload of
# bench/compare.sh, and the top of each.
#
#   bench/profiles.sh [out-dir]
#
# Starts 3 members on 127.0.0.1 (REST 18081-18083, debug listeners
# 16061-16063 via --pprof-addr) and, for each workload, runs kvbench (its
# clients on the members in turn, 1,000 keys, 218-byte values) for DUR
# (default 8s) while taking a CPU profile and a block
# profile (delta over the same window) from the control group's leader,
# which leads group 0 where the replicated region lives. The profiles are
# kept in out-dir (default a temp dir) for `go tool pprof`; the script prints
# the five heaviest functions of each (flat CPU, cumulative delay).
#
# Traffic goes to 127.0.0.1 only, every load is bounded by DUR; only the
# processes this script started are signalled, by PID.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DUR=${DUR:-8s}
OUTDIR=${1:-$(mktemp -d "${TMPDIR:-/tmp}/kvnode-profiles.XXXXXX")}
mkdir -p "$OUTDIR"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kvnode-prof.XXXXXX")
PIDS=()
JOIN=127.0.0.1:17951,127.0.0.1:17952,127.0.0.1:17953
EP=http://127.0.0.1:18081,http://127.0.0.1:18082,http://127.0.0.1:18083
# shellcheck source=bench/procs.sh
. "$ROOT/bench/procs.sh"
cleanup() {
  stop_pids "${PIDS[@]}"
  rm -rf "$WORK"
}
trap cleanup EXIT

bench_bins "$WORK"
for i in 1 2 3; do
  "$KVNODE" --name "pf$i" --data-dir "$WORK/n$i" \
    --http-addr "127.0.0.1:1808$i" --internal-addr "127.0.0.1:1707$i" --gossip-addr "127.0.0.1:1795$i" \
    --pprof-addr "127.0.0.1:1606$i" --join "$JOIN" --bootstrap-expect 3 \
    --regions orders:REPLICATE,events:PARTITION --log-level warn >"$WORK/n$i.log" 2>&1 &
  PIDS+=("$!")
done
wait_ready ${EP//,/ }
sleep 2
leader=$(curl -s http://127.0.0.1:18081/management/v1/cluster | python3 -c 'import json,sys; print(json.load(sys.stdin)["leader"])')
li=${leader#pf}
echo "profiles of $leader (leader of group 0) in $OUTDIR"
secs=${DUR%s}

profile() { # profile NAME kvbench-args...
  local name=$1; shift
  curl -s "http://127.0.0.1:1606$li/debug/pprof/profile?seconds=$((secs - 1))" >"$OUTDIR/$name.cpu.pb.gz" &
  local cpu=$!
  curl -s "http://127.0.0.1:1606$li/debug/pprof/block?seconds=$((secs - 1))" >"$OUTDIR/$name.block.pb.gz" &
  local blk=$!
  "$KVBENCH" --endpoints "$EP" --keys 1000 --value-size 218 --warmup 0s --duration "$DUR" --json -q "$@" |
    python3 -c 'import json, sys; p = json.loads(sys.stdin.read().splitlines()[-1]); l = p["latency_ms"]; print("%s: %.0f/s, p50 %.2f ms, p99 %.2f ms, errors %d" % (sys.argv[1], p["ops_per_sec"], l["p50"], l["p99"], p["errors"]))' "$name"
  wait "$cpu" "$blk"
  echo "  CPU (flat):"
  go tool pprof -top -nodecount=5 "$OUTDIR/$name.cpu.pb.gz" 2>/dev/null | awk '/flat%/ {on=1; next} on {printf "    %s %s  %s\n", $1, $2, $6}'
  echo "  blocked (cumulative):"
  go tool pprof -top -cum -nodecount=8 "$OUTDIR/$name.block.pb.gz" 2>/dev/null | awk '/flat%/ {on=1; next} on && $6 !~ /^runtime\./ {printf "    %s  %s\n", $4, $6}' | head -5
}
# Preload both regions' keys (put-if-absent takes fresh ones).
"$KVBENCH" --endpoints "$EP" --region orders --keys 1000 --value-size 218 --workload put -c 4 --duration 1s -q >/dev/null
"$KVBENCH" --endpoints "$EP" --region events --keys 1000 --value-size 218 --workload put -c 4 --duration 1s -q >/dev/null
profile put-c1 --region orders --workload put -c 1 --preload=false
profile put-c64 --region orders --workload put -c 64 --preload=false
profile put-c256 --region orders --workload put -c 256 --preload=false
profile get-lin-c64 --region orders --workload get -c 64 --preload=false
profile get-stale-c64 --region orders --workload get -c 64 --preload=false --consistency stale
profile create-c16 --region orders --workload put-if-absent -c 16
profile put-c64-partitioned --region events --workload put -c 64 --preload=false
