#!/usr/bin/env bash
# scaleout.sh — does write capacity grow with members? N members on this one
# machine, each in a cgroup of its own with the same CPU quota, as if each
# were a small machine; the load generator (kvbench) outside the quotas, with
# the same number of clients per member.
#
#   bench/scaleout.sh [results.txt]
#
# 1. For N in $SIZES (default 3 6 9 12) and each region type (PARTITION,
#    REPLICATE): a fresh cluster of N members started with --partition-groups
#    auto (so at least as many groups as members), closed-loop upserts of
#    ~200-byte values over 10,000 keys by $PER clients per member (default
#    24) sent to the members in turn, $WARMUP then $DURATION; writes/s, p99,
#    errors, the share of the members' CPU periods that were throttled, and
#    the load generator's own CPU use (a share of one core: a load generator
#    near the machine's cores is the bottleneck, not the cluster).
# 2. With GROWN=N: a cluster started on 3 members (its PARTITION region
#    written for 5 s), grown online to N (members 4-N started at once) and
#    measured as in 1 once its rebalance ended (row "N*").
# 3. Growth: 3 members under the load of $((PER*6)) clients, then three more
#    join; with --partition-groups auto and --auto-rebalance the control
#    leader grows the groups to 6 and moves buckets into them. Throughput
#    every 2 s, the moments the members were started and the rebalance ended.
#
# The CPU quota: $QUOTA percent of one core per member (default 12), through
# the cgroup v1 cpu controller (cpu.cfs_quota_us over cpu.cfs_period_us) when
# /sys/fs/cgroup/cpu is mounted, else cgroup v2's cpu.max; the output says
# which. Needs root (to create cgroups), curl and python3 (JSON and the SVG).
# The plot goes to $SVG (default docs/bench/scaleout.svg). LOGS=dir keeps the
# members' logs of the last cluster there (LOGLEVEL: theirs, default warn).
#
# Every load is bounded by --duration; traffic goes to 127.0.0.1 only; only
# the processes this script started are signalled, by PID.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-/dev/null}
SIZES=${SIZES:-"3 6 9 12"}
QUOTA=${QUOTA:-12}
PER=${PER:-24}
DURATION=${DURATION:-15s}
WARMUP=${WARMUP:-5s}
GROWTH=${GROWTH:-1}
GROWN=${GROWN:-}
# ROUTE=leader sends each write to its key's group leader (kvbench --route
# leader, as a single-hop client would); round-robin (the default) sends it
# to the members in turn, and the member that takes it forwards it.
ROUTE=${ROUTE:-round-robin}
TYPES=${TYPES:-"PARTITION REPLICATE"}
SVG=${SVG:-$ROOT/docs/bench/scaleout.svg}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kvnode-scaleout.XXXXXX")
PIDS=()

say() { echo "$*" | tee -a "$OUT" >>"$WORK/out.txt"; echo "$*"; }

if [[ -d /sys/fs/cgroup/cpu && -w /sys/fs/cgroup/cpu ]]; then
  CGV=1 CG=/sys/fs/cgroup/cpu/kvnode-scaleout-$$
elif [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
  CGV=2 CG=/sys/fs/cgroup/kvnode-scaleout-$$
  echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
else
  echo "no writable cgroup cpu controller (v1 /sys/fs/cgroup/cpu or v2 cpu.max): run as root" >&2
  exit 1
fi
mkdir -p "$CG"

# shellcheck source=bench/procs.sh
. "$ROOT/bench/procs.sh"
stop_all() {
  stop_pids "${PIDS[@]}"
  PIDS=()
  for d in "$CG"/m*; do [[ -d $d ]] && rmdir "$d" 2>/dev/null || true; done
}
cleanup() {
  local rc=$?
  stop_all
  rmdir "$CG" 2>/dev/null || true
  if [[ -n ${LOGS:-} ]]; then mkdir -p "$LOGS" && cp "$WORK"/*.log "$LOGS"/ 2>/dev/null || true; fi
  if ((rc != 0)); then
    for f in "$WORK"/*.log; do [[ -f $f ]] && { echo "--- $f"; tail -5 "$f"; }; done >&2
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# member I EXPECT JOIN: starts member I in its cgroup (moved there before it
# execs, so all of its threads run under the quota).
member() {
  local i=$1 expect=$2 join=$3 cg="$CG/m$1"
  mkdir -p "$cg"
  if ((CGV == 1)); then
    echo 100000 >"$cg/cpu.cfs_period_us"
    echo $((QUOTA * 1000)) >"$cg/cpu.cfs_quota_us"
  else
    echo "$((QUOTA * 1000)) 100000" >"$cg/cpu.max"
  fi
  sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' _ "$cg" "$WORK/kvnode" --name "s$i" --data-dir "$WORK/d$i" \
    --http-addr "127.0.0.1:$((19100 + i))" --internal-addr "127.0.0.1:$((19200 + i))" \
    --gossip-addr "127.0.0.1:$((19300 + i))" --join "$join" --bootstrap-expect "$expect" \
    --partition-groups auto --log-level "${LOGLEVEL:-warn}" >"$WORK/s$i.log" 2>&1 &
  PIDS+=("$!")
}

joinlist() { local out=() i; for i in $(seq 1 "$1"); do out+=("127.0.0.1:$((19300 + i))"); done; (IFS=,; echo "${out[*]}"); }
endpoints() { local out=() i; for i in $(seq 1 "$1"); do out+=("http://127.0.0.1:$((19100 + i))"); done; (IFS=,; echo "${out[*]}"); }

# ready N: every member ready, N partition groups, each with a leader.
ready() {
  local n=$1 i ok
  for _ in $(seq 1 600); do
    ok=1
    for i in $(seq 1 "$n"); do
      [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((19100 + i))/readyz")" == 200 ]] || { ok=0; break; }
    done
    if ((ok)) && curl -s "http://127.0.0.1:19101/management/v1/partitions" | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if d["partitionGroups"] >= int(sys.argv[1]) and all(g.get("leader") for g in d["groups"]) else 1)' "$n" 2>/dev/null; then
      return 0
    fi
    sleep 0.5
  done
  echo "the cluster of $n did not get ready" >&2
  return 1
}

# throttled: the share of the members' CPU periods that hit the quota.
throttled() {
  local periods=0 thr=0 f
  for f in "$CG"/m*/cpu.stat; do
    periods=$((periods + $(awk '/^nr_periods/ {print $2}' "$f")))
    thr=$((thr + $(awk '/^nr_throttled/ {print $2}' "$f")))
  done
  ((periods > 0)) && echo $((100 * thr / periods)) || echo 0
}

# measure TYPE N LABEL: the point of N running members (writes of region
# scale:TYPE by PER*N clients), printed as a row labelled LABEL.
measure() {
  local type=$1 n=$2 label=$3 c u s r line ops p99 errs lg thr
  c=$((PER * n))
  { time "$WORK/kvbench" --endpoints "$(endpoints "$n")" --create-region "scale:$type" --workload put \
      --preload=false --keys 10000 --value-size 200 -c "$c" --warmup "$WARMUP" --duration "$DURATION" \
      --route "$ROUTE" --timeout 10s --json -q >"$WORK/point.json"; } 2>"$WORK/time.txt"
  read -r u s r <"$WORK/time.txt"
  line=$(python3 - "$WORK/point.json" "$u" "$s" "$r" <<'EOF'
import json, sys
p = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
u, s, r = map(float, sys.argv[2:5])
print(f'{p["ops_per_sec"]:.0f} {p["latency_ms"]["p99"]:.0f} {p["errors"]} {100 * (u + s) / r:.0f}')
EOF
)
  read -r ops p99 errs lg <<<"$line"
  thr=$(throttled)
  say "$(printf '%-9s %3s %7d %9s %8s %7s %9s%% %8s%%' "$type" "$label" "$c" "$ops" "$p99" "$errs" "$thr" "$lg")"
}

# settled: every partition group on the members the table names (voters,
# no non-voter left) and led by the first of them, its preferred leader:
# the replicas and leaderships a rebalance moves are in place.
settled() {
  curl -s http://127.0.0.1:19101/management/v1/partitions | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if all(g.get("members") and sorted(g.get("voters") or []) == sorted(g["members"]) and not g.get("nonVoters") and g.get("leader") == g["members"][0] for g in d["groups"]) else 1)' 2>/dev/null
}

# rebalanced: every rebalance operation ended, and one in SUCCESS.
rebalanced() {
  curl -s http://127.0.0.1:19101/management/v1/operations/rebalances | python3 -c '
import json, sys
d = json.load(sys.stdin)["result"]
sys.exit(0 if d and all(r["operationStatus"] != "IN_PROGRESS" for r in d) and any(r["operationStatus"] == "SUCCESS" for r in d) else 1)' 2>/dev/null
}

say "scaleout.sh, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo '+changes')"
say "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
say "each member: $QUOTA% of one core (cgroup v$CGV $([[ $CGV == 1 ]] && echo cpu.cfs_quota_us/cpu.cfs_period_us || echo cpu.max)); $PER clients per member; $WARMUP warm-up, $DURATION measured; kvbench --route $ROUTE"
(cd "$ROOT" && CGO_ENABLED=0 go build -o "$WORK/kvnode" ./cmd/kvnode && go build -o "$WORK/kvbench" ./cmd/kvbench)

say ""
say "$(printf '%-9s %3s %7s %9s %8s %7s %10s %9s' region N clients writes/s p99_ms errors throttled loadgen)"
TIMEFORMAT='%U %S %R'
for type in $TYPES; do
  for n in $SIZES; do
    rm -rf "$WORK"/d*
    join=$(joinlist "$n")
    for i in $(seq 1 "$n"); do member "$i" "$n" "$join"; done
    ready "$n"
    measure "$type" "$n" "$n"
    stop_all
  done
done

# Grown: a cluster started on 3 members and grown online to $GROWN, then
# measured as the points above (PARTITION).
if [[ -n $GROWN ]]; then
  rm -rf "$WORK"/d*
  for i in 1 2 3; do member "$i" 3 "$(joinlist 3)"; done
  ready 3
  "$WORK/kvbench" --endpoints "$(endpoints 3)" --create-region scale:PARTITION --workload put --keys 10000 \
    --value-size 200 -c 24 --duration 5s --route "$ROUTE" --timeout 10s -q >/dev/null
  t0=$(date +%s)
  for i in $(seq 4 "$GROWN"); do member "$i" 3 "$(joinlist "$GROWN")"; done
  ready "$GROWN"
  for _ in $(seq 1 600); do rebalanced && break; sleep 0.5; done
  rebalanced || { echo "the rebalance to $GROWN members did not end" >&2; exit 1; }
  t1=$(date +%s)
  for _ in $(seq 1 600); do settled && break; sleep 0.5; done
  settled || { echo "the replicas and leaders of $GROWN members did not settle" >&2; exit 1; }
  say "PARTITION ${GROWN}*: started on 3 members, members 4-$GROWN started at once; groups grown and rebalanced $((t1 - t0)) s later, replicas and leaders in place $(($(date +%s) - t0)) s later"
  measure PARTITION "$GROWN" "${GROWN}*"
  stop_all
fi

GROWTH_TSV=$WORK/growth.tsv
: >"$GROWTH_TSV"
if ((GROWTH)); then
  say ""
  say "growth: 3 members under the load of $((PER * 6)) clients (sent to the first three), three more join at 20 s"
  rm -rf "$WORK"/d*
  join=$(joinlist 3)
  for i in 1 2 3; do member "$i" 3 "$join"; done
  ready 3
  curl -s -X POST -H 'Content-Type: application/json' -d '{"name":"grow","type":"PARTITION"}' \
    http://127.0.0.1:19101/management/v1/regions >/dev/null
  start=$(date +%s.%N)
  points=$(python3 -c "print(','.join(['$((PER * 6))'] * 45))")
  (
    "$WORK/kvbench" --endpoints "$(endpoints 3)" --region grow --workload put --preload=false --keys 10000 \
      --route "$ROUTE" --value-size 200 -c "$points" --duration 2s --timeout 10s --json -q |
      while read -r l; do printf '%s\t%s\n' "$(date +%s.%N)" "$l"; done >"$WORK/growth.jsonl"
  ) &
  lg=$!
  sleep 20
  joined=$(date +%s.%N)
  for i in 4 5 6; do member "$i" 3 "$(joinlist 6)"; done
  ended="" readyAt="" settledAt=""
  while kill -0 "$lg" 2>/dev/null; do
    if [[ -z $readyAt ]]; then
      r=1
      for i in 4 5 6; do
        [[ "$(curl -s -m 1 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((19100 + i))/readyz")" == 200 ]] || r=0
      done
      ((r)) && readyAt=$(date +%s.%N)
    fi
    if [[ -n $ended && -z $settledAt ]] && settled; then
      settledAt=$(date +%s.%N)
    fi
    if [[ -z $ended ]] && rebalanced; then
      ended=$(date +%s.%N)
    fi
    sleep 0.5
  done
  wait "$lg" || true
  python3 - "$WORK/growth.jsonl" "$start" "$joined" "${ended:-0}" "$GROWTH_TSV" "${readyAt:-0}" "${settledAt:-0}" <<'EOF' | tee -a "$OUT" "$WORK/out.txt"
import json, sys
rows, start, joined, ended, tsv = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
ready = float(sys.argv[6])
settled = float(sys.argv[7])
with open(tsv, "w") as out:
    out.write(f"# joined\t{joined - start:.1f}\n# rebalanced\t{(ended - start) if ended else -1:.1f}\n")
    for line in open(rows):
        t, j = line.split("\t", 1)
        p = json.loads(j)
        out.write(f"{float(t) - start:.1f}\t{p['ops_per_sec']:.0f}\t{p['errors']}\n")
        print(f"  t={float(t) - start:5.1f}s  {p['ops_per_sec']:6.0f} writes/s  p99 {p['latency_ms']['p99']:5.0f} ms  errors {p['errors']}")
pts = [(float(l.split("\t", 1)[0]) - start, json.loads(l.split("\t", 1)[1])) for l in open(rows)]
if pts and ready:
    # The plateau: the mean of the run's last 30 s (6 members, rebalanced).
    last = [p["ops_per_sec"] for t, p in pts if t >= pts[-1][0] - 30]
    plateau = sum(last) / len(last)
    hit = next((t for t, p in pts if t >= ready - start and p["ops_per_sec"] >= 0.9 * plateau), None)
    below = [f"{t:.0f}s" for t, p in pts if hit is not None and t > hit and p["ops_per_sec"] < 0.9 * plateau]
    print(f"  plateau (mean of the last 30 s) {plateau:.0f} writes/s; 90% of it ({0.9 * plateau:.0f}) " +
          (f"first reached at {hit:.1f}s, {hit - (ready - start):.1f}s after the new members were ready" if hit is not None else "not reached") +
          (f"; below it again at {', '.join(below)}" if below else "") +
          f"; failed requests {sum(p['errors'] for _, p in pts)}")
print(f"  members 4-6 started at {joined - start:.1f}s, " + (f"all three ready at {ready - start:.1f}s; " if ready else "not all ready during the run; ") + (f"the rebalance ended at {ended - start:.1f}s" if ended else "no rebalance ended during the run") +
      (f", replicas and leaders in place at {settled - start:.1f}s" if settled else ""))
EOF
  stop_all
fi

python3 "$ROOT/bench/scaleout_plot.py" "$WORK/out.txt" "$SVG"
say ""
say "plot: ${SVG#$ROOT/}"
