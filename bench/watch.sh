#!/usr/bin/env bash
# watch.sh — issue 21's watch benchmark: WATCHERS watchers on one member
# while RATE writes per second flow; event delivery latency, missing events
# and the member's memory.
#
#   bench/watch.sh [--three] [results.jsonl]
#
# Builds kvnode and kvbench, starts one member (or with --three a 3-member
# cluster) on 127.0.0.1 (REST 18091-18093) in a temp dir, waits for
# /readyz, then runs `kvbench --workload watch`: WATCHERS (default 1000)
# SSE streams of GET /kv/v1/watch on the first member, each live before
# RATE (default 1000) writes/s flow for DUR (default 30s) over KEYS
# (default 1000) keys, by WRITERS (default 64) writers to every member in
# turn. VALUE_SIZE pads the values (default 0: ~60 bytes, the stamp
# alone). KVNODE=path runs that kvnode binary instead of building this
# checkout's. Prints the result and appends its JSON to results.jsonl
# (default a temp file).
#
# The members get the hard open-file limit (ulimit -n) and, when kvnode
# has the flag, --max-watchers WATCHERS+100. Every load is bounded by DUR
# and kvbench's drain timeout; all traffic goes to 127.0.0.1; only the
# processes this script started are stopped, by PID.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
THREE=0
if [[ "${1:-}" == "--three" ]]; then THREE=1; shift; fi
OUT=${1:-${TMPDIR:-/tmp}/kvnode-watch.$(date +%Y%m%d-%H%M%S).jsonl}
WATCHERS=${WATCHERS:-1000}
RATE=${RATE:-1000}
DUR=${DUR:-30s}
KEYS=${KEYS:-1000}
WRITERS=${WRITERS:-64}
VALUE_SIZE=${VALUE_SIZE:-0}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kvnode-watch.XXXXXX")
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
  rm -rf "$WORK"
}
trap cleanup EXIT

need=$((WATCHERS + 200))
hard=$(ulimit -Hn)
if [[ "$hard" != unlimited && "$hard" -lt "$need" ]]; then
  echo "the hard open-file limit is $hard; $WATCHERS watchers need about $need (raise it: ulimit -Hn)" >&2
  exit 1
fi
ulimit -n "$hard"

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "building kvbench$([[ -z "${KVNODE:-}" ]] && echo " and kvnode") at $(cd "$ROOT" && git rev-parse --short HEAD)"
(cd "$ROOT" && go build -o "$WORK/kvbench" ./cmd/kvbench)
if [[ -n "${KVNODE:-}" ]]; then
  cp "$KVNODE" "$WORK/kvnode"
else
  (cd "$ROOT" && CGO_ENABLED=0 go build -o "$WORK/kvnode" ./cmd/kvnode)
fi

EXTRA=()
if "$WORK/kvnode" --help 2>&1 | grep -q -- '--max-watchers'; then
  EXTRA+=(--max-watchers $((WATCHERS + 100)))
fi
if ((THREE)); then
  N=3
  JOIN=127.0.0.1:17961,127.0.0.1:17962,127.0.0.1:17963
else
  N=1
  JOIN=127.0.0.1:17961
fi
EP=
for i in $(seq 1 "$N"); do
  "$WORK/kvnode" --name "watch$i" --data-dir "$WORK/n$i" \
    --http-addr "127.0.0.1:1809$i" --internal-addr "127.0.0.1:1709$i" --gossip-addr "127.0.0.1:1796$i" \
    --join "$JOIN" --bootstrap-expect "$N" --regions watched:REPLICATE --log-level warn "${EXTRA[@]}" \
    >"$WORK/n$i.log" 2>&1 &
  PIDS+=("$!")
  EP+=${EP:+,}http://127.0.0.1:1809$i
done
for _ in $(seq 1 300); do
  ok=0
  for i in $(seq 1 "$N"); do
    [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:1809$i/readyz")" == 200 ]] && ok=$((ok + 1))
  done
  ((ok == N)) && break
  sleep 0.2
done
((ok == N)) || { echo "kvnode did not come up; logs in $WORK" >&2; tail -20 "$WORK"/n*.log >&2; exit 1; }
echo "$N member(s) up (${EXTRA[*]:-no --max-watchers flag}); watchers on http://127.0.0.1:18091, pid ${PIDS[0]}"

status=0
"$WORK/kvbench" --workload watch --endpoints "$EP" --region watched --watchers "$WATCHERS" \
  --rate "$RATE" --duration "$DUR" --keys "$KEYS" --key-prefix w- --concurrency "$WRITERS" \
  --value-size "$VALUE_SIZE" --label "watch-${N}m-${WATCHERS}w-${RATE}ps" --json >"$WORK/result.json" || status=$?
cat "$WORK/result.json" >>"$OUT"
python3 "$ROOT/bench/watch-summary.py" "$WORK/result.json"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); results: $OUT"
exit "$status"
