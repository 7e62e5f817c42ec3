#!/usr/bin/env bash
# bucketmove.sh — one bucket of 100,000 entries (~200 bytes each) moves to a
# new partition group under write load (issue 29's target: within 10 s, the
# p99 of writes to the moving bucket under 500 ms, other buckets' writes at
# most 20% slower). Three members on 127.0.0.1 with the defaults (4
# partition groups), no CPU quotas; bench/bucketmove (the load and the
# measurement) outside them. The rebalance from 4 to 5 groups moves group
# 1's highest bucket, 112, first.
#
#   bench/bucketmove.sh [results.txt]
#
# KVNODE=path uses that kvnode binary instead of building this checkout's
# (to compare with another commit; LABEL=text says which in the output); the other settings are bucketmove's
# flags, passed through ARGS (e.g. ARGS="--entries 20000").
#
# Traffic goes to 127.0.0.1 only; the load is bounded by --max-time; only
# the processes this script started are signalled, by PID.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-/dev/null}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kvnode-bucketmove.XXXXXX")
PIDS=()
say() { echo "$*" | tee -a "$OUT"; }
# shellcheck source=bench/procs.sh
. "$ROOT/bench/procs.sh"
cleanup() {
  local rc=$?
  stop_pids "${PIDS[@]}"
  if ((rc != 0)); then
    for f in "$WORK"/m*.log; do [[ -f $f ]] && { echo "--- $f"; grep -v 'level=INFO' "$f" | tail -20; }; done >&2
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

if [[ -n ${KVNODE:-} ]]; then
  cp "$KVNODE" "$WORK/kvnode"
  what="kvnode binary $KVNODE${LABEL:+ ($LABEL)}"
else
  (cd "$ROOT" && CGO_ENABLED=0 go build -o "$WORK/kvnode" ./cmd/kvnode)
  what="commit $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo '+changes')"
fi
(cd "$ROOT" && go build -o "$WORK/bucketmove" ./bench/bucketmove)
say "bucketmove.sh, $(date -u +%Y-%m-%dT%H:%MZ), $what"
say "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"

join="127.0.0.1:19501,127.0.0.1:19502,127.0.0.1:19503"
for i in 1 2 3; do
  "$WORK/kvnode" --name "m$i" --data-dir "$WORK/d$i" --http-addr "127.0.0.1:$((19400 + i))" \
    --internal-addr "127.0.0.1:$((19450 + i))" --gossip-addr "127.0.0.1:$((19500 + i))" \
    --join "$join" --bootstrap-expect 3 --log-level info >"$WORK/m$i.log" 2>&1 &
  PIDS+=("$!")
done
for _ in $(seq 1 600); do
  ok=1
  for i in 1 2 3; do
    [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((19400 + i))/readyz")" == 200 ]] || ok=0
  done
  ((ok)) && break
  sleep 0.5
done
((ok)) || { echo "the cluster did not get ready" >&2; tail -5 "$WORK"/m*.log >&2; exit 1; }

# shellcheck disable=SC2086
"$WORK/bucketmove" --members "http://127.0.0.1:19401,http://127.0.0.1:19402,http://127.0.0.1:19403" \
  --logs "$WORK/m1.log,$WORK/m2.log,$WORK/m3.log" ${ARGS:-} | tee -a "$OUT"
grep -h 'copying a bucket again' "$WORK"/m*.log | tee -a "$OUT" || true
