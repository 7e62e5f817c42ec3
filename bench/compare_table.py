#!/usr/bin/env python3
"""compare_table.py: the table of a bench/compare.sh run, from its raw results.

    python3 bench/compare_table.py results.jsonl

The results are the lines compare.sh wrote: {"meta": {...}} first, then one
kvbench JSON result per point, labelled "<system>:<point>". The table is
Markdown, so that docs quote it as it was printed, never typed: ops/s with
p50 and p99 latency for kvnode (through its Go client with single hop, and,
in runs that have it, with single hop off), etcd 3.6 over gRPC and etcd 3.6
through its JSON gateway, and kvnode's ratio to etcd's; the PARTITION puts against the
REPLICATE region's; the no-op HTTP server's reads against kvnode's; etcd 3.4
as a footnote when the run has it. A point with failed operations is flagged.
"""
import json
import sys

ROWS = [
    ("put-c1", "put, 1 client"),
    ("put-c64", "put, 64 clients"),
    ("put-c256", "put, 256 clients"),
    ("get-lin-c64", "linearizable get, 64 clients"),
    ("get-stale-c64", "stale get, 64 clients (etcd: serializable)"),
    ("create-c16", "put-if-absent, 16 clients (etcd: txn)"),
]
PARTITIONED = [("put-c64", "PARTITION put, 64 clients"), ("put-c256", "PARTITION put, 256 clients")]


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
            system, _, point = doc.get("label", "").partition(":")
            if system and point:
                points[(system, point)] = doc
    return meta, points


def cell(r):
    if r is None:
        return "–"
    lat = r["latency_ms"]
    s = f"{r['ops_per_sec']:,.0f}/s (p50 {lat['p50']:.2f}, p99 {lat['p99']:.1f} ms)"
    if r["errors"]:
        s += f" **{r['errors']:,} failed**"
    return s


def ratio(a, b, of=lambda r: r["ops_per_sec"]):
    """a's throughput over b's (or another figure of theirs)."""
    if a is None or b is None or not of(b):
        return "–"
    return f"{of(a) / of(b):.2f}×"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    meta, points = load(sys.argv[1])
    m = meta.get("machine", {})
    etcd = meta.get("etcd", "3.6")
    print(f"kvnode against etcd {etcd}, commit {meta.get('commit', '?')}, {meta.get('date', '?')}")
    print(f"machine: {m.get('cores', '?')} cores, {m.get('model', '?')}, {m.get('memory_gib', '?')} GiB, "
          f"Linux {m.get('kernel', '?')}; {meta.get('go', '?')}")
    print(f"three members of each on 127.0.0.1, one system at a time; each point {meta.get('warmup', '?')} "
          f"warm-up, then {meta.get('duration', '?')}; {meta.get('keys', '?'):,} keys, "
          f"{meta.get('value_size', '?')}-byte values")
    print()
    rr = any(s == "kvnode-rr" for s, _ in points)
    if rr:
        print(f"| workload | kvnode (Go client, single hop) | etcd {etcd} gRPC | ratio | kvnode, single hop off | ratio | etcd {etcd} JSON gateway | ratio |")
        print("|---|---|---|---|---|---|---|---|")
    else:  # runs from before compare.sh measured both
        print(f"| workload | kvnode | etcd {etcd} gRPC | ratio | etcd {etcd} JSON gateway | ratio |")
        print("|---|---|---|---|---|---|")
    for point, title in ROWS:
        kv, grpc, gw, kvrr = (points.get((s, point)) for s in ("kvnode", "etcd-grpc", "etcd-gateway", "kvnode-rr"))
        middle = f" {cell(kvrr)} | {ratio(kvrr, grpc)} |" if rr else ""
        print(f"| {title} | {cell(kv)} | {cell(grpc)} | {ratio(kv, grpc)} |{middle} {cell(gw)} | {ratio(kv, gw)} |")
    for point, title in PARTITIONED:
        part, rep = points.get(("kvnode", point + "-partitioned")), points.get(("kvnode", point))
        partrr, reprr = points.get(("kvnode-rr", point + "-partitioned")), points.get(("kvnode-rr", point))
        if part is not None:
            middle = f" {cell(partrr)} | {ratio(partrr, reprr)} of REPLICATE |" if rr else ""
            print(f"| {title} | {cell(part)} | | {ratio(part, rep)} of REPLICATE |{middle} | |")

    noop = points.get(("noop-http", "get-c64"))
    if noop is not None:
        print()
        line = f"A no-op Go net/http server (every GET answered with the same body) serves {cell(noop)} to the same load with 64 clients"
        shares = []
        for point, what in (("get-stale-c64", "stale"), ("get-lin-c64", "linearizable")):
            kv = points.get(("kvnode", point))
            if kv is not None and noop["ops_per_sec"]:
                shares.append(f"{what} get {100 * kv['ops_per_sec'] / noop['ops_per_sec']:.0f}%")
        if shares:
            line += "; kvnode's " + ", ".join(shares) + " of it"
        print(line + ".")

    old = [(title, points.get(("etcd34-gateway", point)), points.get(("kvnode", point))) for point, title in ROWS]
    if any(r is not None for _, r, _ in old):
        print()
        print(f"etcd {meta.get('etcd34') or '3.4'} (Debian's) through its JSON gateway, for reference: " +
              "; ".join(f"{title} {cell(r)}, kvnode {ratio(kv, r)}" for title, r, kv in old if r is not None) + ".")


if __name__ == "__main__":
    main()
