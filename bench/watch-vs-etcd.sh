#!/usr/bin/env bash
# watch-vs-etcd.sh — issue 21's watch benchmark against kvnode and etcd in one
# invocation, one after the other, with the same watchers, rate, duration,
# keys and value size: the project compares performance with etcd on the
# same machine in the same run.
#
#   bench/watch-vs-etcd.sh [--single] [results.jsonl]
#
# 1. kvnode: bench/watch.sh --three (three members on 127.0.0.1, the
#    watchers on the first, the writes to every member in turn).
# 2. etcd: a three-member etcd 3.4 started by ../shared/bench/etcd3.sh
#    (ETCD3 overrides the path), then `kvbench --workload watch --target etcd`:
#    WATCHERS streams of its JSON gateway's POST /v3/watch on the prefix
#    "watched/" of the first member, the writes (POST /v3/kv/put) to every
#    member in turn; then etcd3.sh stop.
# With --single, one member of each: bench/watch.sh without --three, and one
# etcd member this script starts itself on 127.0.0.1:23794 (peer 23804),
# because etcd3.sh always starts three.
#
# Knobs as for watch.sh: WATCHERS (1000), RATE (1000), DUR (30s), KEYS
# (1000), WRITERS (64), VALUE_SIZE (0), KVNODE. Both results are appended to
# results.jsonl (default a temp file); `ps` of the busiest processes is
# sampled every 10 s into results.ps.log (what else ran). Every load is
# bounded by DUR and kvbench's drain timeout; all traffic stays on
# 127.0.0.1; only the processes this script started are stopped, by PID.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SINGLE=0
if [[ "${1:-}" == "--single" ]]; then SINGLE=1; shift; fi
OUT=${1:-${TMPDIR:-/tmp}/kvnode-watch-vs-etcd.$(date +%Y%m%d-%H%M%S).jsonl}
export WATCHERS=${WATCHERS:-1000} RATE=${RATE:-1000} DUR=${DUR:-30s} KEYS=${KEYS:-1000}
export WRITERS=${WRITERS:-64} VALUE_SIZE=${VALUE_SIZE:-0}
ETCD3=${ETCD3:-$ROOT/../shared/bench/etcd3.sh}
PSLOG=${OUT%.jsonl}.ps.log
WORK=$(mktemp -d "${TMPDIR:-/tmp}/watch-vs-etcd.XXXXXX")
ETCD_PID=     # the single etcd member, when this script started it
STARTED3=0    # etcd3.sh start succeeded
SAMPLER=

stop_pid() { # pid, comm to match: TERM, wait up to 10 s, KILL
  local pid=$1 comm=$2
  kill -0 "$pid" 2>/dev/null && grep -q "$comm" "/proc/$pid/comm" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

cleanup() {
  [[ -n "$SAMPLER" ]] && { kill "$SAMPLER" 2>/dev/null || true; wait "$SAMPLER" 2>/dev/null || true; }
  ((STARTED3)) && { "$ETCD3" stop || true; }
  [[ -n "$ETCD_PID" ]] && stop_pid "$ETCD_PID" etcd
  rm -rf "$WORK"
}
trap cleanup EXIT

command -v etcd >/dev/null || { echo "etcd not found (apt-get install -y etcd-server etcd-client)" >&2; exit 1; }
need=$((WATCHERS + 200))
hard=$(ulimit -Hn)
if [[ "$hard" != unlimited && "$hard" -lt "$need" ]]; then
  echo "the hard open-file limit is $hard; $WATCHERS watchers need about $need (raise it: ulimit -Hn)" >&2
  exit 1
fi
ulimit -n "$hard" # etcd's members inherit it

# What else ran: the busiest processes every 10 s, bounded by the count.
(
  for _ in $(seq 1 120); do
    { date -u +%T; uptime; ps -eo pid,pcpu,rss,etime,comm --sort=-pcpu | head -8; echo; } >>"$PSLOG"
    sleep 10
  done
) &
SAMPLER=$!

N=3
((SINGLE)) && N=1
echo "== $(date -u +%FT%TZ) kvnode, $N member(s): $WATCHERS watchers, $RATE writes/s, $DUR, $KEYS keys; $(etcd --version | head -1)"
echo "uptime: $(uptime)"
status=0 # a failed half (missing events, say) is reported, and the other still runs
if ((SINGLE)); then "$HERE/watch.sh" "$OUT" || status=$?; else "$HERE/watch.sh" --three "$OUT" || status=$?; fi

echo "== $(date -u +%FT%TZ) etcd, $N member(s)"
(cd "$ROOT" && go build -o "$WORK/kvbench" ./cmd/kvbench)
if ((SINGLE)); then
  EP=http://127.0.0.1:23794
  setsid etcd --name solo --data-dir "$WORK/etcd" \
    --listen-client-urls "$EP" --advertise-client-urls "$EP" \
    --listen-peer-urls http://127.0.0.1:23804 --initial-advertise-peer-urls http://127.0.0.1:23804 \
    --initial-cluster solo=http://127.0.0.1:23804 --initial-cluster-state new \
    --logger zap --log-outputs "$WORK/etcd.log" >"$WORK/etcd.stdout" 2>&1 </dev/null &
  ETCD_PID=$!
  for _ in $(seq 1 150); do
    curl -s "$EP/health" | grep -q '"health":"true"' && break
    sleep 0.2
  done
  curl -s "$EP/health" | grep -q '"health":"true"' || { echo "etcd did not come up; log:" >&2; tail -20 "$WORK/etcd.log" >&2; exit 1; }
  echo "1 etcd member up on $EP, pid $ETCD_PID"
else
  "$ETCD3" start
  STARTED3=1
  EP=$("$ETCD3" endpoints)
fi
echo "uptime: $(uptime)"
"$WORK/kvbench" --workload watch --target etcd --endpoints "$EP" --region watched --watchers "$WATCHERS" \
  --rate "$RATE" --duration "$DUR" --keys "$KEYS" --key-prefix w- --concurrency "$WRITERS" \
  --value-size "$VALUE_SIZE" --label "etcd-watch-${N}m-${WATCHERS}w-${RATE}ps" --json >"$WORK/result.json" || status=$?
cat "$WORK/result.json" >>"$OUT"
python3 "$HERE/watch-summary.py" "$WORK/result.json"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); results: $OUT; ps samples: $PSLOG"
exit "$status"
