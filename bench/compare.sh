#!/usr/bin/env bash
# compare.sh — kvnode against etcd 3.6 on the same machine, in one run, with
# nothing from outside the repository (issue 30).
#
#   bench/compare.sh [results.jsonl]
#
# Builds kvnode, kvbench, etcd 3.6 (bench/etcd36, from its Go module) and
# kvbench-etcd, then, one system at a time on 127.0.0.1:
#   1. kvnode: three members (REST 18081-18083; regions orders REPLICATE and
#      events PARTITION), loaded by kvbench through kvnode's Go client (package
#      client) as it ships, with single hop ("kvnode"), then with single hop
#      off, every member taking requests in turn ("kvnode-rr");
#   2. etcd 3.6: three members (clients 23791-23793), loaded by kvbench-etcd
#      --target etcd-grpc (clientv3, one connection per client); then a fresh
#      three-member cluster loaded by kvbench --target etcd (its v3 JSON
#      gateway);
#   3. noophttp (18090), a Go net/http server answering every GET with the
#      same 218-byte body, loaded by kvbench's get workload: what HTTP alone
#      allows here, the ceiling of kvnode's reads.
# Every system gets the same points: put at 1, 64 and 256 clients,
# linearizable get at 64, stale get at 64 (etcd: serializable),
# put-if-absent at 16 (etcd: a txn If(CreateRevision == 0) Then(Put)); and
# kvnode the puts at 64 and 256 on its PARTITION region, against the
# REPLICATE one. KEYS keys (1,000), VALUE_SIZE-byte values (218), WARMUP (1s)
# before each point of DUR (5s); the first point of each system preloads the
# keys.
#
# The raw results go to results.jsonl (default a new file in $TMPDIR): a first
# line {"meta":{...}} (machine, commit, versions, knobs), then kvbench's JSON,
# one line per point, labelled "<system>:<point>". bench/compare_table.py
# prints the table from them, here at the end and again whenever asked:
#   python3 bench/compare_table.py results.jsonl
#
# ETCD34=1 adds Debian's etcd 3.4 (`etcd` on PATH, or ETCD34_BIN) through its
# JSON gateway, as a footnote. PORT_OFFSET shifts every port (to run beside
# another cluster).
#
# Every load is bounded by WARMUP + DUR (and kvbench's preload timeout); all
# traffic stays on 127.0.0.1; only the processes this script started are
# stopped, by PID.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-${TMPDIR:-/tmp}/kvnode-vs-etcd.$(date +%Y%m%d-%H%M%S).jsonl}
DUR=${DUR:-5s}
WARMUP=${WARMUP:-1s}
KEYS=${KEYS:-1000}
VALUE_SIZE=${VALUE_SIZE:-218}
ETCD34=${ETCD34:-0}
OFF=${PORT_OFFSET:-0}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kvnode-compare.XXXXXX")
PIDS=() # the processes of the system running now

# stop_all stops the processes in PIDS (each still the program this script
# started, by its name): TERM, up to 10 s, then KILL.
stop_all() {
  local pid
  for pid in "${PIDS[@]}"; do
    [[ -r "/proc/$pid/comm" ]] && grep -qE '^(kvnode|etcd|noophttp)$' "/proc/$pid/comm" && kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && grep -qE '^(kvnode|etcd|noophttp)$' "/proc/$pid/comm" && kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
}
cleanup() {
  local rc=$?
  stop_all
  if ((rc != 0)); then
    for f in "$WORK"/*.log; do [[ -f "$f" ]] && { echo "--- $(basename "$f") (last 15 lines)"; tail -15 "$f"; }; done >&2
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

port() { echo $(($1 + OFF)); }
# free refuses to start on a port something else listens on.
free() {
  local p
  for p in "$@"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "port $p of 127.0.0.1 is in use: stop what listens there, or set PORT_OFFSET" >&2
      exit 1
    fi
  done
}
# wait_for waits up to 60 s until every URL answers 200 with a body holding
# its pattern.
wait_for() {
  local pattern=$1 what=$2; shift 2
  local ok u
  for _ in $(seq 1 300); do
    ok=0
    for u in "$@"; do
      curl -s --max-time 2 "$u" 2>/dev/null | grep -q "$pattern" && ok=$((ok + 1))
    done
    ((ok == $#)) && return 0
    sleep 0.2
  done
  echo "$what did not come up" >&2
  exit 1
}

echo "building kvnode, kvbench, noophttp, etcd 3.6 and kvbench-etcd"
(cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -o "$WORK/kvnode" ./cmd/kvnode &&
  go build -o "$WORK/kvbench" ./cmd/kvbench && go build -o "$WORK/noophttp" ./bench/noophttp)
(cd "$ROOT/bench/etcd36" && CGO_ENABLED=0 go build -trimpath -o "$WORK/etcd" ./cmd/etcd &&
  go build -o "$WORK/kvbench-etcd" ./cmd/kvbench-etcd)

ETCD_VERSION=$("$WORK/etcd" --version | awk '/etcd Version/ {print $3}')
ETCD34_VERSION=
if ((ETCD34)); then
  ETCD34_BIN=${ETCD34_BIN:-$(command -v etcd || true)}
  [[ -x "$ETCD34_BIN" ]] || { echo "ETCD34=1: no etcd 3.4 on PATH (apt-get install -y etcd-server) and no ETCD34_BIN" >&2; exit 1; }
  ETCD34_VERSION=$("$ETCD34_BIN" --version | awk '/etcd Version/ {print $3}')
fi
# The run's description, the first line of the results.
META_CORES=$(nproc) META_MODEL=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) \
META_MEM=$(awk '/MemTotal/ {printf "%.0f", $2/1048576}' /proc/meminfo) META_KERNEL=$(uname -r) \
META_COMMIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo +changes)" \
META_GO=$(go version | awk '{print $3}') META_ETCD=$ETCD_VERSION META_ETCD34=$ETCD34_VERSION \
META_DUR=$DUR META_WARMUP=$WARMUP META_KEYS=$KEYS META_VALUE=$VALUE_SIZE python3 - "$OUT" <<'PY'
import datetime, json, os, sys
e = os.environ
meta = {"machine": {"cores": int(e["META_CORES"]), "model": e["META_MODEL"], "memory_gib": int(e["META_MEM"]), "kernel": e["META_KERNEL"]},
        "commit": e["META_COMMIT"], "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "go": e["META_GO"], "etcd": e["META_ETCD"], "etcd34": e["META_ETCD34"],
        "duration": e["META_DUR"], "warmup": e["META_WARMUP"], "keys": int(e["META_KEYS"]), "value_size": int(e["META_VALUE"])}
with open(sys.argv[1], "w") as f:
    f.write(json.dumps({"meta": meta}) + "\n")
PY
echo "results: $OUT"

# bench runs one point: system, point, the tool, then kvbench's flags.
bench() {
  local system=$1 point=$2 tool=$3; shift 3
  echo "== $system $point" >&2
  "$WORK/$tool" --keys "$KEYS" --value-size "$VALUE_SIZE" --duration "$DUR" --warmup "$WARMUP" \
    --preload-timeout 2m --json -q --label "$system:$point" "$@" | tee -a "$OUT"
}

# points runs the points every system has; $1 is the system, the rest the
# tool and flags that reach it.
points() {
  local system=$1; shift
  bench "$system" put-c1 "$@" --workload put -c 1
  bench "$system" put-c64 "$@" --workload put -c 64 --preload=false
  bench "$system" put-c256 "$@" --workload put -c 256 --preload=false
  bench "$system" get-lin-c64 "$@" --workload get -c 64 --preload=false
  bench "$system" get-stale-c64 "$@" --workload get -c 64 --preload=false --consistency stale
  bench "$system" create-c16 "$@" --workload put-if-absent -c 16
}

# --- kvnode ---
KV_REST=() KV_JOIN=()
for i in 1 2 3; do KV_REST+=("$(port $((18080 + i)))"); KV_JOIN+=("127.0.0.1:$(port $((17950 + i)))"); done
free "${KV_REST[@]}" $(port 17071) $(port 17072) $(port 17073) $(port 17951) $(port 17952) $(port 17953)
JOIN=$(IFS=,; echo "${KV_JOIN[*]}")
EP=$(printf 'http://127.0.0.1:%s,' "${KV_REST[@]}"); EP=${EP%,}
for i in 1 2 3; do
  "$WORK/kvnode" --name "bench$i" --data-dir "$WORK/n$i" \
    --http-addr "127.0.0.1:${KV_REST[i - 1]}" --internal-addr "127.0.0.1:$(port $((17070 + i)))" \
    --gossip-addr "127.0.0.1:$(port $((17950 + i)))" --join "$JOIN" --bootstrap-expect 3 \
    --regions orders:REPLICATE,events:PARTITION --log-level warn >"$WORK/kvnode$i.log" 2>&1 &
  PIDS+=("$!")
done
wait_for '"orders"' "the kvnode cluster" $(printf 'http://127.0.0.1:%s/kv/v1 ' "${KV_REST[@]}")
echo "kvnode: 3 members up" >&2
# kvnode's Go client as it ships (single hop: a key's write or
# linearizable read goes to its group's leader), then the same points with
# single hop off (every member takes requests in turn and forwards, as
# etcd's members do for its clients). Each with the puts on the
# partitioned region, against the replicated one's.
for route in leader round-robin; do
  system=kvnode
  [[ $route == leader ]] || system=kvnode-rr
  points "$system" kvbench --endpoints "$EP" --region orders --route "$route"
  bench "$system" put-c64-partitioned kvbench --endpoints "$EP" --region events --route "$route" --workload put -c 64
  bench "$system" put-c256-partitioned kvbench --endpoints "$EP" --region events --route "$route" --workload put -c 256 --preload=false
done
stop_all

# --- etcd: a fresh three-member cluster of binary $1 ---
start_etcd() {
  local bin=$1 name=$2 i cluster="" extra=()
  [[ "$name" == etcd34 ]] && extra=(--logger zap) # 3.4 logs with capnslog unless asked
  for i in 1 2 3; do cluster+="e$i=http://127.0.0.1:$(port $((23800 + i))),"; done
  free $(port 23791) $(port 23792) $(port 23793) $(port 23801) $(port 23802) $(port 23803)
  for i in 1 2 3; do
    local c="http://127.0.0.1:$(port $((23790 + i)))" p="http://127.0.0.1:$(port $((23800 + i)))"
    "$bin" --name "e$i" --data-dir "$WORK/$name-e$i" --listen-client-urls "$c" --advertise-client-urls "$c" \
      --listen-peer-urls "$p" --initial-advertise-peer-urls "$p" --initial-cluster "${cluster%,}" \
      --initial-cluster-state new --initial-cluster-token "kvbench-$name-$$" --log-level warn "${extra[@]}" \
      >"$WORK/$name-e$i.log" 2>&1 &
    PIDS+=("$!")
  done
  wait_for '"health":"true"' "the $name cluster" $(for i in 1 2 3; do echo "http://127.0.0.1:$(port $((23790 + i)))/health"; done)
  echo "$name: 3 members up" >&2
}
EEP=$(for i in 1 2 3; do printf 'http://127.0.0.1:%s,' "$(port $((23790 + i)))"; done); EEP=${EEP%,}

start_etcd "$WORK/etcd" etcd36
points etcd-grpc kvbench-etcd --target etcd-grpc --endpoints "$EEP" --region orders
stop_all
start_etcd "$WORK/etcd" etcd36-gateway
points etcd-gateway kvbench --target etcd --endpoints "$EEP" --region orders
stop_all

# --- what HTTP alone allows ---
free "$(port 18090)"
"$WORK/noophttp" --addr "127.0.0.1:$(port 18090)" --size "$VALUE_SIZE" >"$WORK/noophttp.log" 2>&1 &
PIDS+=("$!")
wait_for '"orders"' "noophttp" "http://127.0.0.1:$(port 18090)/kv/v1"
bench noop-http get-c64 kvbench --endpoints "http://127.0.0.1:$(port 18090)" --workload get -c 64 --preload=false
stop_all

if ((ETCD34)); then
  start_etcd "$ETCD34_BIN" etcd34
  points etcd34-gateway kvbench --target etcd --endpoints "$EEP" --region orders
  stop_all
fi

echo
python3 "$ROOT/bench/compare_table.py" "$OUT"
echo "results: $OUT"
