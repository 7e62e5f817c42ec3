#!/usr/bin/env bash
# compare.sh — kvnode against etcd on the same machine, in one run.
#
#   bench/compare.sh [results.jsonl]
#
# Starts a 3-node kvnode cluster on 127.0.0.1 (REST 18081-18083), runs the
# shared load generator (../shared/bench/loadgen) against it, stops it, then
# does the same against a 3-member etcd 3.4 cluster (../shared/bench/etcd3.sh),
# and prints both side by side. Needs etcd (apt-get install -y etcd-server
# etcd-client). Knobs: DUR (default 10s), KEYS (default 1000), SHARED (path of
# the shared bench dir, default ../shared/bench next to the repository).
#
# Every load run is bounded by DUR; all traffic goes to 127.0.0.1; only the
# processes this script starts are stopped, by PID.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SHARED:-$(cd "$ROOT/../shared/bench" 2>/dev/null && pwd || true)}
[[ -n "$SHARED" && -d "$SHARED/loadgen" ]] || { echo "shared bench dir not found; set SHARED=/path/to/shared/bench" >&2; exit 1; }
OUT=${1:-${TMPDIR:-/tmp}/kvnode-vs-etcd.$(date +%Y%m%d-%H%M%S).jsonl}
DUR=${DUR:-10s}
KEYS=${KEYS:-1000}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kvnode-bench.XXXXXX")
PIDS=()

cleanup() {
  for pid in "${PIDS[@]}"; do
    if kill -0 "$pid" 2>/dev/null && grep -q kvnode "/proc/$pid/comm" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
    fi
  done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  done
  "$SHARED/etcd3.sh" stop >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "building kvnode and loadgen"
(cd "$ROOT" && CGO_ENABLED=0 go build -o "$WORK/kvnode" ./cmd/kvnode)
(cd "$SHARED/loadgen" && go build -o "$WORK/loadgen" .)

JOIN=127.0.0.1:17951,127.0.0.1:17952,127.0.0.1:17953
EP=http://127.0.0.1:18081,http://127.0.0.1:18082,http://127.0.0.1:18083
for i in 1 2 3; do
  "$WORK/kvnode" --name "bench$i" --data-dir "$WORK/n$i" \
    --http-addr "127.0.0.1:1808$i" --internal-addr "127.0.0.1:1707$i" --gossip-addr "127.0.0.1:1795$i" \
    --join "$JOIN" --bootstrap-expect 3 --regions orders:REPLICATE,events:PARTITION --log-level warn \
    >"$WORK/n$i.log" 2>&1 &
  PIDS+=("$!")
done
for _ in $(seq 1 300); do
  ok=0
  for i in 1 2 3; do
    [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:1808$i/kv/v1/orders?limit=0")" == 200 ]] && ok=$((ok + 1))
  done
  ((ok == 3)) && break
  sleep 0.2
done
((ok == 3)) || { echo "kvnode cluster did not come up; logs in $WORK" >&2; tail -20 "$WORK"/n*.log >&2; exit 1; }
echo "kvnode cluster up"

kv() { local label=$1; shift; "$WORK/loadgen" -target kv -region orders -endpoints "$EP" -keys "$KEYS" -d "$DUR" -json -label "kv-$label" "$@" | tee -a "$OUT"; }
# The rows of issue 18's targets. The first put preloads the keys; the rest
# reuse them.
kv put-c1 -op put -c 1
kv put-c64 -op put -c 64 -preload=false
kv put-c256 -op put -c 256 -preload=false
kv get-lin-c64 -op get -c 64 -preload=false
kv get-stale-c64 -op get -c 64 -preload=false -serializable
kv create-c16 -op create -c 16
# The same puts on a partitioned region, compared with the replicated
# region's (and etcd's) at the same concurrency.
kv put-c64-partitioned -op put -c 64 -region events
kv put-c256-partitioned -op put -c 256 -region events -preload=false
for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
PIDS=()

"$SHARED/etcd3.sh" start >/dev/null
EEP=$("$SHARED/etcd3.sh" endpoints)
et() { local label=$1; shift; "$WORK/loadgen" -target etcd -endpoints "$EEP" -keys "$KEYS" -d "$DUR" -json -label "etcd-$label" "$@" | tee -a "$OUT"; }
et put-c1 -op put -c 1
et put-c64 -op put -c 64 -preload=false
et put-c256 -op put -c 256 -preload=false
et get-lin-c64 -op get -c 64 -preload=false
et get-stale-c64 -op get -c 64 -preload=false -serializable
et create-c16 -op create -c 16
"$SHARED/etcd3.sh" stop >/dev/null

echo
python3 - "$OUT" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    target, _, label = r["label"].partition("-")
    rows.setdefault(label, {})[target] = r
def pct(r, p):
    return max(o[p] for o in r["per_op"]) if r.get("per_op") else float("nan")
print(f"{'workload':<24}{'kvnode ops/s':>13}{'p50 ms':>8}{'p99 ms':>8}{'etcd ops/s':>12}{'p50 ms':>8}{'p99 ms':>8}{'ratio':>8}")
for label, byt in rows.items():
    kv, et = byt.get("kv"), byt.get("etcd")
    if label.endswith("-partitioned"):
        # compared with kvnode's replicated region, and etcd for reference
        base = rows.get(label.removesuffix("-partitioned"), {})
        et = base.get("etcd")
        rep = base.get("kv")
    cell = lambda r, w: f"{r['ops_per_sec']:>{w}.0f}{pct(r, 'p50_ms'):>8.2f}{pct(r, 'p99_ms'):>8.1f}" if r else f"{'-':>{w}}{'-':>8}{'-':>8}"
    ratio = f"{kv['ops_per_sec'] / et['ops_per_sec']:.2f}x" if kv and et and et["ops_per_sec"] else "-"
    fails = sum(r["failed"] for r in (kv, et) if r)
    extra = ""
    if label.endswith("-partitioned") and kv and rep:
        extra = f"   ({kv['ops_per_sec'] / rep['ops_per_sec']:.2f}x the replicated region)"
    print(f"{label:<24}{cell(kv, 13)}{cell(et, 12)}{ratio:>8}{extra}" + (f"   ({fails} failed)" if fails else ""))
PY
echo "results: $OUT"
