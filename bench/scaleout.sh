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
# 2. Growth: 3 members under the load of $((PER*6)) clients, then three more
#    join; with --partition-groups auto and --auto-rebalance the control
#    leader grows the groups to 6 and moves buckets into them. Throughput
#    every 2 s, the moments the members were started and the rebalance ended.
#
# The CPU quota: $QUOTA percent of one core per member (default 12), through
# the cgroup v1 cpu controller (cpu.cfs_quota_us over cpu.cfs_period_us) when
# /sys/fs/cgroup/cpu is mounted, else cgroup v2's cpu.max; the output says
# which. Needs root (to create cgroups), curl and python3 (JSON and the SVG).
# The plot goes to $SVG (default docs/bench/scaleout.svg).
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
SVG=${SVG:-$ROOT/docs/bench/scaleout.svg}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kvnode-scaleout.XXXXXX")
PIDS=()

say() { echo "$*" | tee -a "$OUT"; }

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

stop_all() {
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  done
  PIDS=()
  for d in "$CG"/m*; do [[ -d $d ]] && rmdir "$d" 2>/dev/null || true; done
}
cleanup() {
  local rc=$?
  stop_all
  rmdir "$CG" 2>/dev/null || true
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
    --partition-groups auto --log-level warn >"$WORK/s$i.log" 2>&1 &
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

say "scaleout.sh, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo '+changes')"
say "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
say "each member: $QUOTA% of one core (cgroup v$CGV $([[ $CGV == 1 ]] && echo cpu.cfs_quota_us/cpu.cfs_period_us || echo cpu.max)); $PER clients per member; $WARMUP warm-up, $DURATION measured"
(cd "$ROOT" && CGO_ENABLED=0 go build -o "$WORK/kvnode" ./cmd/kvnode && go build -o "$WORK/kvbench" ./cmd/kvbench)

RESULTS=$WORK/results.tsv
: >"$RESULTS"
say ""
say "$(printf '%-9s %3s %7s %9s %8s %7s %10s %9s' region N clients writes/s p99_ms errors throttled loadgen)"
TIMEFORMAT='%U %S %R'
for type in PARTITION REPLICATE; do
  for n in $SIZES; do
    rm -rf "$WORK"/d*
    join=$(joinlist "$n")
    for i in $(seq 1 "$n"); do member "$i" "$n" "$join"; done
    ready "$n"
    c=$((PER * n))
    { time "$WORK/kvbench" --endpoints "$(endpoints "$n")" --create-region "scale:$type" --workload put \
        --preload=false --keys 10000 --value-size 200 -c "$c" --warmup "$WARMUP" --duration "$DURATION" \
        --timeout 10s --json -q >"$WORK/point.json"; } 2>"$WORK/time.txt"
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
    say "$(printf '%-9s %3d %7d %9s %8s %7s %9s%% %8s%%' "$type" "$n" "$c" "$ops" "$p99" "$errs" "$thr" "$lg")"
    printf '%s\t%d\t%s\t%s\t%s\n' "$type" "$n" "$ops" "$p99" "$errs" >>"$RESULTS"
    stop_all
  done
done

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
      --value-size 200 -c "$points" --duration 2s --timeout 10s --json -q |
      while read -r l; do printf '%s\t%s\n' "$(date +%s.%N)" "$l"; done >"$WORK/growth.jsonl"
  ) &
  lg=$!
  sleep 20
  joined=$(date +%s.%N)
  for i in 4 5 6; do member "$i" 3 "$(joinlist 6)"; done
  ended=""
  while kill -0 "$lg" 2>/dev/null; do
    if [[ -z $ended ]] && curl -s http://127.0.0.1:19101/management/v1/operations/rebalances | python3 -c '
import json, sys
d = json.load(sys.stdin)["result"]
sys.exit(0 if d and all(r["operationStatus"] != "IN_PROGRESS" for r in d) and any(r["operationStatus"] == "SUCCESS" for r in d) else 1)' 2>/dev/null; then
      ended=$(date +%s.%N)
    fi
    sleep 0.5
  done
  wait "$lg" || true
  python3 - "$WORK/growth.jsonl" "$start" "$joined" "${ended:-0}" "$GROWTH_TSV" <<'EOF' | tee -a "$OUT"
import json, sys
rows, start, joined, ended, tsv = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
with open(tsv, "w") as out:
    out.write(f"# joined\t{joined - start:.1f}\n# rebalanced\t{(ended - start) if ended else -1:.1f}\n")
    for line in open(rows):
        t, j = line.split("\t", 1)
        p = json.loads(j)
        out.write(f"{float(t) - start:.1f}\t{p['ops_per_sec']:.0f}\t{p['errors']}\n")
        print(f"  t={float(t) - start:5.1f}s  {p['ops_per_sec']:6.0f} writes/s  p99 {p['latency_ms']['p99']:5.0f} ms  errors {p['errors']}")
print(f"  members 4-6 started at {joined - start:.1f}s; " + (f"the rebalance ended at {ended - start:.1f}s" if ended else "no rebalance ended during the run"))
EOF
  stop_all
fi

python3 - "$RESULTS" "$GROWTH_TSV" "$SVG" "$QUOTA" "$PER" <<'EOF'
import sys
res, growth, svg, quota, per = sys.argv[1:6]
pts = {}
for line in open(res):
    t, n, ops, p99, errs = line.split("\t")
    pts.setdefault(t, []).append((int(n), float(ops)))
W, H, M = 460, 300, 50
def chart(x0, title, series, xlab, xs, markers=()):
    allx = [x for s in series.values() for x, _ in s] or [0, 1]
    ally = [y for s in series.values() for _, y in s] or [1]
    xmax, ymax = max(allx + list(xs)), max(ally) * 1.15 or 1
    X = lambda x: x0 + M + (W - M - 20) * x / xmax
    Y = lambda y: H - M + 10 - (H - M - 20) * y / ymax
    out = [f'<text x="{x0 + W / 2}" y="18" text-anchor="middle" font-size="13">{title}</text>',
           f'<line x1="{X(0)}" y1="{Y(0)}" x2="{X(xmax)}" y2="{Y(0)}" stroke="#333"/>',
           f'<line x1="{X(0)}" y1="{Y(0)}" x2="{X(0)}" y2="{Y(ymax)}" stroke="#333"/>',
           f'<text x="{x0 + W / 2}" y="{H - 8}" text-anchor="middle" font-size="11">{xlab}</text>']
    for k in range(5):
        y = ymax * k / 4
        out.append(f'<text x="{X(0) - 4}" y="{Y(y) + 4}" text-anchor="end" font-size="10">{y:.0f}</text>')
    for x in xs:
        out.append(f'<text x="{X(x)}" y="{Y(0) + 14}" text-anchor="middle" font-size="10">{x:g}</text>')
    for label, x in markers:
        if x >= 0:
            out.append(f'<line x1="{X(x)}" y1="{Y(0)}" x2="{X(x)}" y2="{Y(ymax)}" stroke="#999" stroke-dasharray="4 3"/>')
            out.append(f'<text x="{X(x) + 3}" y="{Y(ymax) + 12}" font-size="10" fill="#555">{label}</text>')
    colors = ["#1f77b4", "#d62728", "#2ca02c"]
    for i, (name, s) in enumerate(series.items()):
        s = sorted(s)
        d = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in s)
        out.append(f'<polyline points="{d}" fill="none" stroke="{colors[i]}" stroke-width="2"/>')
        for x, y in s if len(s) < 20 else []:
            out.append(f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="3" fill="{colors[i]}"/>')
        out.append(f'<text x="{x0 + M + 10}" y="{40 + 14 * i}" font-size="11" fill="{colors[i]}">{name}</text>')
    return out
body = chart(0, f"writes/s against members ({quota}% of a core each, {per} clients per member)",
             {k: v for k, v in pts.items()}, "members", sorted({n for v in pts.values() for n, _ in v}))
g, marks = [], []
try:
    for line in open(growth):
        if line.startswith("# joined"):
            marks.append(("members 4-6 start", float(line.split()[-1])))
        elif line.startswith("# rebalanced"):
            marks.append(("rebalance ends", float(line.split()[-1])))
        elif line.strip():
            t, ops, _ = line.split("\t")
            g.append((float(t), float(ops)))
except FileNotFoundError:
    pass
if g:
    body += chart(W + 20, "growing from 3 to 6 members under load", {"PARTITION writes/s": g}, "seconds", [0, 30, 60, 90], marks)
width = 2 * W + 20 if g else W
open(svg, "w").write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{H}" font-family="sans-serif">\n'
                      + "\n".join(body) + "\n</svg>\n")
EOF
say ""
say "plot: ${SVG#$ROOT/}"
