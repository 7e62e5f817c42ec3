#!/usr/bin/env bash
# singlehop.sh — single hop against no single hop, on 3 and on 6 members,
# in one run (issue 31).
#
#   bench/singlehop.sh [results.jsonl]
#
# Builds kvnode and kvbench from this checkout (KVNODE, KVBENCH name others:
# bench/procs.sh's bench_bins), then for N in MEMBERS (3 6) starts N members
# on 127.0.0.1 with --partition-groups auto (a partition group per member at
# least) and the regions orders (REPLICATE) and events (PARTITION), waits
# until every group is in place and led by its preferred leader (no move
# under way), and on each region runs kvbench's
#   put at 64 clients, linearizable get at 64, put-if-absent at 16,
# each with --route leader (package client's single hop: each key to its
# group's leader) and --route round-robin (single hop off: the members in
# turn, and the member that takes a request forwards it), the two in turn
# and their order flipped every point, ROUNDS times (1). KEYS keys (1,000)
# preloaded by the first point of each region, VALUE_SIZE-byte values
# (218), WARMUP (1s) before each point of DUR (5s): compare.sh's points.
#
# BEFORE=path/to/kvbench adds the same points measured by another kvbench
# build (e.g. one before the target moved onto package client: its own
# leader map and transport), labelled "before", the two builds in turn
# (order flipped each time), to check that the move cost the load
# generator nothing.
#
# The raw results go to results.jsonl (default a new file in $TMPDIR): a
# first line {"meta":{...}} (machine, commit, versions, knobs), then
# kvbench's JSON, one line per point, labelled
# "<members>:<region>:<workload>:<route>:<round>[:before]", each followed by
# a line {"cpu":{...}} of kvbench's own CPU seconds (it needs /usr/bin/time).
# bench/singlehop_table.py prints the table from them, here at the end and
# again whenever asked.
#
# Every load is bounded by WARMUP + DUR (and kvbench's preload timeout); all
# traffic stays on 127.0.0.1 (ports 19501-19506, 19601-19606, 19701-19706,
# shifted by PORT_OFFSET); only the processes this script started are
# stopped, by PID.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-${TMPDIR:-/tmp}/kvnode-singlehop.$(date +%Y%m%d-%H%M%S).jsonl}
DUR=${DUR:-5s}
WARMUP=${WARMUP:-1s}
KEYS=${KEYS:-1000}
VALUE_SIZE=${VALUE_SIZE:-218}
ROUNDS=${ROUNDS:-1}
MEMBERS=${MEMBERS:-"3 6"}
BEFORE=${BEFORE:-}
OFF=${PORT_OFFSET:-0}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kvnode-singlehop.XXXXXX")
PIDS=()

# shellcheck source=bench/procs.sh
. "$ROOT/bench/procs.sh"
cleanup() {
  local rc=$?
  stop_pids "${PIDS[@]}"
  ((rc != 0)) && tail_logs "$WORK"/*.log
  rm -rf "$WORK"
}
trap cleanup EXIT

rest() { echo $((19500 + $1 + OFF)); }
endpoints() { local out=() i; for i in $(seq 1 "$1"); do out+=("http://127.0.0.1:$(rest "$i")"); done; (IFS=,; echo "${out[*]}"); }
joinlist() { local out=() i; for i in $(seq 1 "$1"); do out+=("127.0.0.1:$((19700 + i + OFF))"); done; (IFS=,; echo "${out[*]}"); }

# start N: a fresh cluster of N members, every group led.
start() {
  local n=$1 i urls=()
  for i in $(seq 1 "$n"); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$(rest "$i")") 2>/dev/null; then
      echo "port $(rest "$i") of 127.0.0.1 is in use: stop what listens there, or set PORT_OFFSET" >&2
      exit 1
    fi
  done
  for i in $(seq 1 "$n"); do
    "$KVNODE" --name "h$i" --data-dir "$WORK/n$n-$i" \
      --http-addr "127.0.0.1:$(rest "$i")" --internal-addr "127.0.0.1:$((19600 + i + OFF))" \
      --gossip-addr "127.0.0.1:$((19700 + i + OFF))" --join "$(joinlist "$n")" --bootstrap-expect "$n" \
      --partition-groups auto --regions orders:REPLICATE,events:PARTITION --log-level warn >"$WORK/n$n-$i.log" 2>&1 &
    PIDS+=("$!")
    urls+=("http://127.0.0.1:$(rest "$i")")
  done
  wait_ready "${urls[@]}"
  # Settled: N partition groups at least, each on the members the table
  # names and led by its preferred leader (scaleout.sh's settled), so that
  # no bucket moves and no leadership changes while a point runs; then the
  # routing document names every leader.
  for _ in $(seq 1 600); do
    if curl -s "${urls[0]}/management/v1/partitions" | python3 -c '
import json, sys
d = json.load(sys.stdin)
ok = d["partitionGroups"] >= int(sys.argv[1]) and all(g.get("members") and sorted(g.get("voters") or []) == sorted(g["members"])
    and not g.get("nonVoters") and g.get("leader") == g["members"][0] for g in d["groups"])
sys.exit(0 if ok else 1)' "$n" 2>/dev/null &&
      curl -s "${urls[0]}/management/v1/routing" | python3 -c '
import json, sys
d = json.load(sys.stdin)
ok = len(d["groups"]) > int(sys.argv[1]) and all(g.get("url") for g in d["groups"]) and set(d["partitionedRegions"]) == {"events"}
sys.exit(0 if ok else 1)' "$n" 2>/dev/null; then
      echo "$n members up, every group settled and led" >&2
      return 0
    fi
    sleep 0.5
  done
  echo "the cluster of $n did not settle (groups, replicas, preferred leaders)" >&2
  exit 1
}

# point TOOL LABEL FLAGS...: one kvbench point, its JSON appended to OUT,
# then a line {"cpu":{"label":...,"seconds":...}}: the CPU time kvbench
# itself used (user + system, warm-up and preload included), so that two
# kvbench builds can be compared by their cost per operation too.
point() {
  local tool=$1 label=$2; shift 2
  echo "== $label" >&2
  /usr/bin/time -f '%U %S' -o "$WORK/cpu" "$tool" --keys "$KEYS" --value-size "$VALUE_SIZE" --duration "$DUR" \
    --warmup "$WARMUP" --preload-timeout 2m --json -q --label "$label" "$@" | tee -a "$OUT"
  awk -v l="$label" '{printf "{\"cpu\":{\"label\":\"%s\",\"seconds\":%.2f}}\n", l, $1 + $2}' "$WORK/cpu" >>"$OUT"
}

bench_bins "$WORK"
# The run's description, the first line of the results.
META_CORES=$(nproc) META_MODEL=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) \
META_MEM=$(awk '/MemTotal/ {printf "%.0f", $2/1048576}' /proc/meminfo) META_KERNEL=$(uname -r) \
META_COMMIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo +changes)" \
META_GO=$(go version | awk '{print $3}') META_LOAD=$(cut -d' ' -f1-3 /proc/loadavg) META_BEFORE=$BEFORE META_MEMBERS=$MEMBERS META_ROUNDS=$ROUNDS \
META_DUR=$DUR META_WARMUP=$WARMUP META_KEYS=$KEYS META_VALUE=$VALUE_SIZE python3 - "$OUT" <<'PY'
import datetime, json, os, sys
e = os.environ
meta = {"machine": {"cores": int(e["META_CORES"]), "model": e["META_MODEL"], "memory_gib": int(e["META_MEM"]), "kernel": e["META_KERNEL"]},
        "commit": e["META_COMMIT"], "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "go": e["META_GO"], "loadavg": e["META_LOAD"], "before": e["META_BEFORE"], "members": [int(n) for n in e["META_MEMBERS"].split()],
        "rounds": int(e["META_ROUNDS"]), "duration": e["META_DUR"], "warmup": e["META_WARMUP"],
        "keys": int(e["META_KEYS"]), "value_size": int(e["META_VALUE"])}
with open(sys.argv[1], "w") as f:
    f.write(json.dumps({"meta": meta}) + "\n")
PY
echo "results: $OUT" >&2

TOOLS=("$KVBENCH")
[[ -n $BEFORE ]] && TOOLS+=("$BEFORE")
flip=0 toolflip=0
for n in $MEMBERS; do
  start "$n"
  ep=$(endpoints "$n")
  for region in orders events; do
    preload=true
    for round in $(seq 1 "$ROUNDS"); do
      for w in "put 64" "get 64" "put-if-absent 16"; do
        read -r workload clients <<<"$w"
        routes=(leader round-robin)
        ((flip)) && routes=(round-robin leader)
        flip=$((1 - flip))
        for route in "${routes[@]}"; do
          tools=("${TOOLS[@]}")
          ((${#TOOLS[@]} > 1 && toolflip)) && tools=("${TOOLS[1]}" "${TOOLS[0]}")
          toolflip=$((1 - toolflip))
          for tool in "${tools[@]}"; do
            label="$n:$region:$workload:$route:$round"
            [[ $tool != "$KVBENCH" ]] && label+=":before"
            point "$tool" "$label" --endpoints "$ep" --region "$region" --workload "$workload" -c "$clients" \
              --route "$route" --preload="$preload"
            preload=false
          done
        done
      done
    done
  done
  stop_pids "${PIDS[@]}"
  PIDS=()
done

echo
python3 "$ROOT/bench/singlehop_table.py" "$OUT"
echo "results: $OUT"
