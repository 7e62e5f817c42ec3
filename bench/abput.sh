#!/usr/bin/env bash
# abput.sh — one round of bench/ab.sh's "put" benchmark: the hot paths of a
# fresh 3-member cluster on 127.0.0.1 (REST 18281-18283), region `orders`
# (REPLICATE), 1,000 keys, 218-byte values, kvbench round robin over the
# members, WARMUP (default 1s) then DURATION (default 5s) per point:
# put at 1 and 64 clients, linearizable and stale get at 64, put-if-absent
# at 16. Prints "metric NAME VALUE" lines (ops/s, and p50 or p99 in ms).
#
#   bench/abput.sh [results.txt]
#
# KVNODE and KVBENCH name the binaries (built from this checkout when
# unset); LABEL names the build in the output. Every load is bounded by
# --duration; traffic goes to 127.0.0.1 only; only the processes this
# script started are signalled, by PID.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-/dev/null}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kvnode-abput.XXXXXX")
PIDS=()
JOIN=127.0.0.1:18961,127.0.0.1:18962,127.0.0.1:18963
EP=http://127.0.0.1:18281,http://127.0.0.1:18282,http://127.0.0.1:18283

say() { echo "$*" | tee -a "$OUT"; }
# shellcheck source=bench/procs.sh
. "$ROOT/bench/procs.sh"
cleanup() {
  stop_pids "${PIDS[@]}"
  rm -rf "$WORK"
}
trap cleanup EXIT

bench_bins "$WORK"
say "abput.sh, $(date -u +%Y-%m-%dT%H:%MZ), ${LABEL:-commit $(git -C "$ROOT" rev-parse --short HEAD)}"
for i in 1 2 3; do
  "$KVNODE" --name "ab$i" --data-dir "$WORK/n$i" \
    --http-addr "127.0.0.1:1828$i" --internal-addr "127.0.0.1:1827$i" --gossip-addr "127.0.0.1:1896$i" \
    --join "$JOIN" --bootstrap-expect 3 --regions orders:REPLICATE --log-level warn >"$WORK/n$i.log" 2>&1 &
  PIDS+=("$!")
done
wait_ready ${EP//,/ }

# point NAME LATENCY kvbench-args...: one point, its ops/s and one latency.
point() {
  local name=$1 pct=$2
  shift 2
  "$KVBENCH" --endpoints "$EP" --region orders --keys 1000 --value-size 218 --warmup "$WARMUP" \
    --duration "$DURATION" --json -q "$@" >"$WORK/p.json"
  python3 - "$WORK/p.json" "$name" "$pct" <<'EOF' | tee -a "$OUT"
import json, sys
p = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
name, pct = sys.argv[2], sys.argv[3]
print(f"{name}: {p['ops_per_sec']:,.0f}/s, {pct} {p['latency_ms'][pct]:.2f} ms, errors {p['errors']}")
print(f"metric {name}_ops {p['ops_per_sec']:.0f}")
print(f"metric {name}_{pct}_ms {p['latency_ms'][pct]:.2f}")
EOF
}
point put_c1 p50 --workload put -c 1
point put_c64 p99 --workload put -c 64
point get_c64 p99 --workload get -c 64
point stale_get_c64 p99 --workload get --consistency stale -c 64
point create_c16 p99 --workload put-if-absent -c 16
