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
throughput and its own CPU per operation (the {"cpu": ...} lines: user +
system seconds over the operations of warm-up and measure, estimated as the
measured operations × (warm-up + duration) / duration) against that one's. A
point with failed operations is flagged.
"""
import json
import statistics
import sys

from compare_table import cell, load, ratio

WORKLOADS = [("put", "put, 64 clients"), ("get", "linearizable get, 64 clients"),
             ("put-if-absent", "put-if-absent, 16 clients")]
REGIONS = [("orders", "REPLICATE"), ("events", "PARTITION")]


def by_point(points):
    """compare_table's points, keyed by (members, region, workload, route, tool): "now", or
    "before" for the other kvbench build's; each a list of the rounds' results."""
    out = {}
    for (members, rest), doc in points.items():
        parts = rest.split(":")
        if len(parts) < 4:
            continue
        key = (int(members), parts[0], parts[1], parts[2], parts[4] if len(parts) > 4 else "now")
        out.setdefault(key, []).append(doc)
    return out


def cpu_seconds(path):
    """kvbench's own CPU seconds per label, from the {"cpu": ...} lines."""
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith('{"cpu"'):
                c = json.loads(line)["cpu"]
                out[c["label"]] = c["seconds"]
    return out


def seconds(text):
    """A Go duration of the meta line ("5s", "500ms") in seconds."""
    if text.endswith("ms"):
        return float(text[:-2]) / 1000
    return float(text.rstrip("s") or 0)


def summary(results):
    """The median of the rounds' throughput, p50 and p99 (shaped as a kvbench result, for
    compare_table's cell and ratio), their errors, and the share of requests routed."""
    if not results:
        return None
    return {
        "ops_per_sec": statistics.median(r["ops_per_sec"] for r in results),
        "latency_ms": {q: statistics.median(r["latency_ms"][q] for r in results) for q in ("p50", "p99")},
        "errors": sum(r["errors"] for r in results),
        "routed": sum(r.get("leader_routed", 0) for r in results) / max(sum(r["ops"] for r in results), 1),
        "cpu_us": statistics.median(r["cpu_us"] for r in results) if all("cpu_us" in r for r in results) else None,
    }


def rows(members):
    """Every (members, region type, workload title, region, workload) of the run, in order."""
    for n in members:
        for region, kind in REGIONS:
            for workload, title in WORKLOADS:
                yield n, kind, title, region, workload


def spread(ratios):
    """Ratios summed up: their geometric mean, median and range."""
    return (f"geometric mean {statistics.geometric_mean(ratios):.2f}×, median {statistics.median(ratios):.2f}×, "
            f"{min(ratios):.2f}-{max(ratios):.2f}×")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    meta, raw = load(sys.argv[1])
    cpu = cpu_seconds(sys.argv[1])
    scale = (seconds(meta.get("warmup", "0s")) + seconds(meta.get("duration", "1s"))) / seconds(meta.get("duration", "1s"))
    for doc in raw.values():
        if doc.get("label") in cpu and doc["ops"]:
            doc["cpu_us"] = cpu[doc["label"]] * 1e6 / (doc["ops"] * scale)
    points = by_point(raw)
    m = meta.get("machine", {})
    members = meta.get("members", sorted({k[0] for k in points}))
    print(f"single hop against none, commit {meta.get('commit', '?')}, {meta.get('date', '?')}")
    print(f"machine: {m.get('cores', '?')} cores, {m.get('model', '?')}, {m.get('memory_gib', '?')} GiB, "
          f"Linux {m.get('kernel', '?')}; {meta.get('go', '?')}" +
          (f"; load average {meta['loadavg']} at the start" if meta.get("loadavg") else ""))
    print(f"members and kvbench on 127.0.0.1, --partition-groups auto; each point {meta.get('warmup', '?')} "
          f"warm-up, then {meta.get('duration', '?')}; {meta.get('keys', '?'):,} keys, "
          f"{meta.get('value_size', '?')}-byte values; median of {meta.get('rounds', 1)} round(s)")
    print()
    gains = []
    print("| members | region | workload | single hop | routed | without | ops/s: with / without | p50: without / with |")
    print("|---|---|---|---|---|---|---|---|")
    for n, kind, title, region, workload in rows(members):
        on = summary(points.get((n, region, workload, "leader", "now"), []))
        off = summary(points.get((n, region, workload, "round-robin", "now"), []))
        if on is None and off is None:
            continue
        routed = f"{on['routed']:.0%}" if on else "–"
        print(f"| {n} | {kind} | {title} | {cell(on)} | {routed} | {cell(off)} | {ratio(on, off)} | {ratio(off, on, lambda r: r['latency_ms']['p50'])} |")
        if on and off:
            gains.append(on["ops_per_sec"] / off["ops_per_sec"])
    if gains:
        print()
        print(f"single hop / without, ops/s over the {len(gains)} rows: {spread(gains)}")
    if not any(k[4] == "before" for k in points):
        return
    print()
    print(f"kvbench at {meta.get('commit', '?')} (package client) against the kvbench of BEFORE "
          f"({meta.get('before', '?')}), the same points in turn")
    print()
    ops, cpus = {}, []
    print("| members | region | workload | route | this kvbench | before | ops/s: this / before | kvbench CPU µs/op: this / before |")
    print("|---|---|---|---|---|---|---|---|")
    for n, kind, title, region, workload in rows(members):
        for route in ("leader", "round-robin"):
            now = summary(points.get((n, region, workload, route, "now"), []))
            before = summary(points.get((n, region, workload, route, "before"), []))
            if now is not None and before is not None:
                us = "–"
                if now["cpu_us"] and before["cpu_us"]:
                    us = f"{now['cpu_us']:.0f} / {before['cpu_us']:.0f}"
                print(f"| {n} | {kind} | {title} | {route} | {cell(now)} | {cell(before)} | {ratio(now, before)} | {us} |")
                ops.setdefault(route, []).append(now["ops_per_sec"] / before["ops_per_sec"])
                if now["cpu_us"] and before["cpu_us"]:
                    cpus.append(now["cpu_us"] / before["cpu_us"])
    print()
    for route, rs in ops.items():
        print(f"this / before, ops/s, {route} ({len(rs)} rows): {spread(rs)}")
    if cpus:
        print(f"this / before, kvbench CPU per operation ({len(cpus)} rows): {spread(cpus)}, "
              f"{sum(1 for c in cpus if abs(c - 1) <= 0.1)} within 10%")


if __name__ == "__main__":
    main()
