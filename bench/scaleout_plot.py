#!/usr/bin/env python3
"""Plot bench/scaleout.sh's results (its text output) as an SVG.

    bench/scaleout_plot.py RESULTS.txt OUT.svg

Left: writes/s against members, a line per region type. Right, when the
results have the growth run: writes/s over time, with the moment the new
members started and the moment the rebalance ended.
"""
import re
import sys

text = open(sys.argv[1]).read()
quota = re.search(r"each member: (\d+)% of one core", text)
per = re.search(r"; (\d+) clients per member", text)
points = {}
for m in re.finditer(r"^(PARTITION|REPLICATE)\s+(\d+)\s+\d+\s+(\d+)", text, re.M):
    points.setdefault(m.group(1), []).append((int(m.group(2)), float(m.group(3))))
growth = [(float(m.group(1)), float(m.group(2))) for m in re.finditer(r"^\s+t=\s*([\d.]+)s\s+(\d+) writes/s", text, re.M)]
marks = []
if m := re.search(r"members 4-6 started at ([\d.]+)s", text):
    marks.append(("members 4-6 start", float(m.group(1))))
if m := re.search(r"all three ready at ([\d.]+)s", text):
    marks.append(("ready", float(m.group(1))))
if m := re.search(r"the rebalance ended at ([\d.]+)s", text):
    marks.append(("rebalance ends", float(m.group(1))))

W, H, M = 460, 300, 50
COLORS = ["#1f77b4", "#d62728"]


def chart(x0, title, series, xlab, xticks, marks=()):
    allx = [x for s in series.values() for x, _ in s] + list(xticks)
    ally = [y for s in series.values() for _, y in s] or [1]
    xmax, ymax = max(allx) or 1, max(ally) * 1.2
    X = lambda x: x0 + M + (W - M - 20) * x / xmax
    Y = lambda y: H - M + 10 - (H - M - 20) * y / ymax
    out = [
        f'<text x="{x0 + W / 2}" y="16" text-anchor="middle" font-size="12">{title}</text>',
        f'<line x1="{X(0)}" y1="{Y(0)}" x2="{X(xmax)}" y2="{Y(0)}" stroke="#333"/>',
        f'<line x1="{X(0)}" y1="{Y(0)}" x2="{X(0)}" y2="{Y(ymax)}" stroke="#333"/>',
        f'<text x="{x0 + W / 2}" y="{H - 8}" text-anchor="middle" font-size="11">{xlab}</text>',
        f'<text x="{x0 + 12}" y="{H / 2}" font-size="11" transform="rotate(-90 {x0 + 12} {H / 2})" text-anchor="middle">writes/s</text>',
    ]
    for k in range(5):
        y = ymax * k / 4
        out.append(f'<text x="{X(0) - 4}" y="{Y(y) + 4}" text-anchor="end" font-size="10">{y:.0f}</text>')
    for x in xticks:
        out.append(f'<text x="{X(x)}" y="{Y(0) + 14}" text-anchor="middle" font-size="10">{x:g}</text>')
    for k, (label, x) in enumerate(marks):
        anchor, dx = ("end", -3) if X(x) > x0 + W - 110 else ("start", 3)
        out.append(f'<line x1="{X(x)}" y1="{Y(0)}" x2="{X(x)}" y2="{Y(ymax)}" stroke="#999" stroke-dasharray="4 3"/>')
        out.append(f'<text x="{X(x) + dx}" y="{Y(ymax) + 24 + 12 * k}" text-anchor="{anchor}" font-size="10" fill="#555">{label}</text>')
    for i, (name, s) in enumerate(series.items()):
        s = sorted(s)
        out.append('<polyline points="' + " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in s) +
                   f'" fill="none" stroke="{COLORS[i]}" stroke-width="2"/>')
        if len(s) < 20:
            out += [f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="3" fill="{COLORS[i]}"/>' for x, y in s]
        out.append(f'<text x="{X(0) + 10}" y="{Y(ymax) + 12 + 14 * i}" font-size="11" fill="{COLORS[i]}">{name}</text>')
    return out


body = chart(0, f"writes/s against members ({quota.group(1) if quota else '?'}% of a core each, "
             f"{per.group(1) if per else '?'} clients per member)", points, "members",
             sorted({n for v in points.values() for n, _ in v}))
width = W
if growth:
    body += chart(W + 20, "growing from 3 to 6 members under load", {"PARTITION": growth}, "seconds",
                  [0, 30, 60, 90], marks)
    width = 2 * W + 20
with open(sys.argv[2], "w") as f:
    f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{H}" font-family="sans-serif">\n')
    f.write("\n".join(body) + "\n</svg>\n")
