#!/usr/bin/env python3
"""bucketmove_table.py RESULTS.txt — the markdown table of docs/performance.md's
"A bucket's move under load" from bench/bucketmove.sh's output (every run in
the file, in order): per run, the build, the move's time, the writes to the
moving bucket during it, and the other buckets' writes during it against the
baseline before the rebalance."""
import re
import sys


def main(path):
    runs, cur = [], None
    for line in open(path):
        if line.startswith("bucketmove.sh,"):
            build = re.search(r"commit ([0-9a-f]{7})|\(([0-9a-f]{7})", line)
            cur = {"build": next(g for g in build.groups() if g)}
            runs.append(cur)
        elif cur is None:
            continue
        elif "the move itself" in line:
            cur["took"] = float(re.search(r"took=([0-9.]+)s", line).group(1))
        else:
            m = re.match(r"(moving bucket|other buckets), (baseline|during its move|during the move)\s+(\d+) writes/s\s+p50\s+([0-9.]+) ms\s+p99\s+([0-9.]+) ms.*failed (\d+)", line)
            if m:
                who = "moving" if m.group(1) == "moving bucket" else "other"
                when = "base" if m.group(2) == "baseline" else "move"
                cur[f"{who}_{when}"] = (int(m.group(3)), float(m.group(4)), float(m.group(5)), int(m.group(6)))
    print("| build | move | writes to the moving bucket during it: /s, p50, p99 | other buckets before: /s | during the move: /s, p99 | change |")
    print("|---|---|---|---|---|---|")
    for r in runs:
        if "took" not in r or "other_move" not in r:
            print(f"| {r['build']} | (failed: see the raw file) | | | | |")
            continue
        mv, ob, om = r["moving_move"], r["other_base"], r["other_move"]
        change = 100 * (om[0] - ob[0]) / ob[0]
        print(f"| {r['build']} | {r['took']:.1f} s | {mv[0]}/s, {mv[1]:.0f} ms, {mv[2]:,.0f} ms | {ob[0]:,} | {om[0]:,}, {om[2]:.0f} ms | {change:+.0f}% |")


if __name__ == "__main__":
    main(sys.argv[1])
