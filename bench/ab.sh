#!/usr/bin/env bash
# ab.sh — the same benchmark against two builds, alternately, on this
# machine: is HEAD faster or slower than REV, and by how much beyond the
# noise?
#
#   bench/ab.sh REV [BENCH] [results.txt]
#
# Builds kvnode at REV (a git worktree of this repository) and at HEAD (the
# working tree, uncommitted changes included, said so in the output), and
# kvbench once, from HEAD, so that both are driven by the same load
# generator. Then ROUNDS rounds (default 3) of BENCH, each round REV then
# HEAD, or HEAD then REV on odd rounds, so that neither always runs on a
# warmer or cooler machine. BENCH is a script of bench/ that takes KVNODE
# and KVBENCH and prints "metric NAME VALUE" lines:
#
#   restart  bench/restart.sh (default): 1M entries in the log, kill -9 of
#            every member, time to the first linearizable read; bulk load
#            entries/s; unindexed COUNT p50
#   put      bench/abput.sh: put, linearizable get, stale get and
#            put-if-absent on a fresh 3-member cluster (see its header)
#
# It prints each round's metrics, then per metric REV's and HEAD's median
# (min-max) and HEAD/REV: the ratio of the medians, with the lowest and
# highest of the rounds' own ratios (a spread that straddles 1.0 means no
# difference was measured). Raw lines go to results.txt as well.
# Run it before merging anything that touches a hot path.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REV=${1:?usage: bench/ab.sh REV [restart|put] [results.txt]}
BENCH=${2:-restart}
OUT=${3:-/dev/null}
ROUNDS=${ROUNDS:-3}
case $BENCH in
  restart) SCRIPT=$ROOT/bench/restart.sh ;;
  put) SCRIPT=$ROOT/bench/abput.sh ;;
  *) echo "unknown benchmark $BENCH: restart or put" >&2; exit 2 ;;
esac
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kvnode-ab.XXXXXX")
cleanup() {
  git -C "$ROOT" worktree remove --force "$WORK/rev" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

base=$(git -C "$ROOT" rev-parse --short "$REV^{commit}")
head=$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- . ':!docs' || echo '+changes')
git -C "$ROOT" worktree add --detach "$WORK/rev" "$base" >/dev/null 2>&1
(cd "$WORK/rev" && CGO_ENABLED=0 go build -o "$WORK/kvnode-a" ./cmd/kvnode)
(cd "$ROOT" && CGO_ENABLED=0 go build -o "$WORK/kvnode-b" ./cmd/kvnode && go build -o "$WORK/kvbench" ./cmd/kvbench)

{
  echo "ab.sh $BENCH, $(date -u +%Y-%m-%dT%H:%MZ): A = $base, B = HEAD $head, $ROUNDS rounds"
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(go version | cut -d' ' -f3)"
} | tee -a "$OUT" "$WORK/all.txt"

for r in $(seq 1 "$ROUNDS"); do
  order="a b"
  ((r % 2 == 0)) || order="b a"
  for side in $order; do
    label=$([[ $side == a ]] && echo "$base" || echo "$head")
    KVNODE=$WORK/kvnode-$side KVBENCH=$WORK/kvbench LABEL=$label bash "$SCRIPT" "$WORK/round.txt" >/dev/null
    sed "s/^metric /metric $side $r /" "$WORK/round.txt" | grep '^metric ' >>"$WORK/metrics.txt"
    sed "s/^/  [$side $r] /" "$WORK/round.txt" | grep -v '\] metric ' | tee -a "$OUT" "$WORK/all.txt"
    : >"$WORK/round.txt"
  done
done

python3 - "$WORK/metrics.txt" "$base" "$head" <<'EOF' | tee -a "$OUT"
import collections, statistics, sys
vals = collections.defaultdict(lambda: collections.defaultdict(dict))
for line in open(sys.argv[1]):
    _, side, rnd, name, value = line.split()
    vals[name][side][int(rnd)] = float(value)
print(f"\n{'metric':<24} {'A ' + sys.argv[2] + ' median (min-max)':>30} {'B ' + sys.argv[3] + ' median (min-max)':>34} {'B/A':>6} {'rounds B/A':>14}")
for name, by in vals.items():
    a, b = by["a"], by["b"]
    rounds = sorted(set(a) & set(b))
    if not rounds:
        continue
    ma, mb = statistics.median(a.values()), statistics.median(b.values())
    ratios = [b[r] / a[r] for r in rounds if a[r]]
    num = lambda v: f"{v:,.2f}" if abs(v) < 100 else f"{v:,.0f}"
    fmt = lambda d: f"{num(statistics.median(d.values()))} ({num(min(d.values()))}-{num(max(d.values()))})"
    print(f"{name:<24} {fmt(a):>30} {fmt(b):>34} {mb / ma if ma else float('nan'):>5.2f}x {min(ratios):>6.2f}-{max(ratios):.2f}x")
EOF
