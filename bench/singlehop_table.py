#!/usr/bin/env python3
"""singlehop_table.py: the tables of a bench/singlehop.sh run, from its raw results.

    python3 bench/singlehop_table.py results.jsonl

The results are the lines singlehop.sh wrote: {"meta": {...}} first, then one
kvbench JSON result per point, labelled
"<members>:<region>:<workload>:<route>:<round>[:before]". The tables are
Markdown, so that docs quote them as they were printed, never typed: per
members, region and workload, throughput, p50 and p99 with single hop
(--route leader) and without (--route round-robin), and their ratio; with
several rounds, the median of each. When the run has "before" points (another
kvbench build on the same points), a second table sets this kvbench's
throughput against that one's. A point with failed operations is flagged.
"""
import json
import statistics
import sys

WORKLOADS = [("put", "put, 64 clients"), ("get", "linearizable get, 64 clients"),
             ("put-if-absent", "put-if-absent, 16 clients")]
REGIONS = [("orders", "REPLICATE"), ("events", "PARTITION")]


def load(path):
    meta, points = {}, {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                doc = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}: not JSON: {e}")
            if "meta" in doc:
                meta = doc["meta"]
                continue
            parts = doc.get("label", "").split(":")
            if len(parts) < 5:
                continue
            members, region, workload, route = int(parts[0]), parts[1], parts[2], parts[3]
            tool = parts[5] if len(parts) > 5 else "now"
            points.setdefault((tool, members, region, workload, route), []).append(doc)
    return meta, points


def summary(results):
    """The median of the rounds' throughput, p50 and p99, and their errors."""
    if not results:
        return None
    return {
        "ops": statistics.median(r["ops_per_sec"] for r in results),
        "p50": statistics.median(r["latency_ms"]["p50"] for r in results),
        "p99": statistics.median(r["latency_ms"]["p99"] for r in results),
        "errors": sum(r["errors"] for r in results),
        "routed": sum(r.get("leader_routed", 0) for r in results) / max(sum(r["ops"] for r in results), 1),
        "rounds": len(results),
    }


def cell(s):
    if s is None:
        return "–"
    out = f"{s['ops']:,.0f}/s (p50 {s['p50']:.2f}, p99 {s['p99']:.1f} ms)"
    if s["errors"]:
        out += f" **{s['errors']:,} failed**"
    return out


def ratio(a, b, key="ops"):
    if a is None or b is None or not b[key]:
        return "–"
    return f"{a[key] / b[key]:.2f}×"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    meta, points = load(sys.argv[1])
    m = meta.get("machine", {})
    members = meta.get("members", sorted({k[1] for k in points}))
    print(f"single hop against none, commit {meta.get('commit', '?')}, {meta.get('date', '?')}")
    print(f"machine: {m.get('cores', '?')} cores, {m.get('model', '?')}, {m.get('memory_gib', '?')} GiB, "
          f"Linux {m.get('kernel', '?')}; {meta.get('go', '?')}")
    print(f"members and kvbench on 127.0.0.1, --partition-groups auto; each point {meta.get('warmup', '?')} "
          f"warm-up, then {meta.get('duration', '?')}; {meta.get('keys', '?'):,} keys, "
          f"{meta.get('value_size', '?')}-byte values; median of {meta.get('rounds', 1)} round(s)")
    print()
    print("| members | region | workload | single hop | routed | without | single hop / without (ops/s) | p50 without / with |")
    print("|---|---|---|---|---|---|---|---|")
    for n in members:
        for region, kind in REGIONS:
            for workload, title in WORKLOADS:
                on = summary(points.get(("now", n, region, workload, "leader"), []))
                off = summary(points.get(("now", n, region, workload, "round-robin"), []))
                if on is None and off is None:
                    continue
                routed = f"{on['routed']:.0%}" if on else "–"
                print(f"| {n} | {kind} | {title} | {cell(on)} | {routed} | {cell(off)} | {ratio(on, off)} | "
                      f"{ratio(off, on, 'p50')} |")
    if not any(k[0] == "before" for k in points):
        return
    print()
    print(f"kvbench at {meta.get('commit', '?')} (package client) against the kvbench of BEFORE "
          f"({meta.get('before', '?')}), the same points in turn")
    print()
    print("| members | region | workload | route | this kvbench | before | this / before (ops/s) |")
    print("|---|---|---|---|---|---|---|")
    for n in members:
        for region, kind in REGIONS:
            for workload, title in WORKLOADS:
                for route in ("leader", "round-robin"):
                    now = summary(points.get(("now", n, region, workload, route), []))
                    before = summary(points.get(("before", n, region, workload, route), []))
                    if now is None or before is None:
                        continue
                    print(f"| {n} | {kind} | {title} | {route} | {cell(now)} | {cell(before)} | {ratio(now, before)} |")


if __name__ == "__main__":
    main()
