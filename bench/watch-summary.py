#!/usr/bin/env python3
"""watch-summary.py RESULTS.jsonl: the summary of kvbench --workload watch --json
results (one object a line) that bench/watch.sh and bench/watch-vs-etcd.sh print."""
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    l, m = r["latency_ms"], r["memory"]
    print(f"{r.get('target', 'kvnode')}: {r['watchers']} watchers of {r['watched']}, {r['target_rate']:.0f} writes/s for {r['seconds']:.1f} s "
          f"({r['writes_ok']} ok, {r['writes'] - r['writes_ok']} failed, {r['unsent']} unsent; ack p99 {r['write_latency_ms']['p99']:.2f} ms)")
    print(f"delivered {r['delivered']:,} of {r['expected']:,} ({r['events_per_sec']:,.0f} events/s); "
          f"missing {r['missing']} ({r['watchers_missing']} watchers), duplicates {r['duplicates']}, ended early {sum(r['ended'].values())}")
    for cause, n in r["ended"].items():
        print(f"  {n} streams ended: {cause}")
    print(f"delivery latency ms: p50 {l['p50']:.2f}  p90 {l['p90']:.2f}  p99 {l['p99']:.2f}  p99.9 {l['p99_9']:.2f}  max {l['max']:.2f}")
    if r.get("memory_error"):
        print("memory not measured:", r["memory_error"])
    else:
        print(f"CPU while watching: member {r['member_cpu_per_sec']:.2f} s/s, kvbench {r['tool_cpu_per_sec']:.2f} s/s")
        print(f"{'member memory':<18}{'heap in use MiB':>16}{'resident MiB':>14}{'goroutines':>12}{'open fds':>10}")
        for k, name in (("before", "before watchers"), ("live", "watchers live"), ("peak", "peak under writes"), ("after", "after close")):
            s = m[k]
            print(f"{name:<18}{s['heap_inuse_bytes'] / 2**20:>16.1f}{s['resident_bytes'] / 2**20:>14.1f}{s['goroutines']:>12.0f}{s['open_fds']:>10.0f}")
