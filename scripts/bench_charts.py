#!/usr/bin/env python3
"""Draws the charts of docs/benchmarks.md from the raw JSON lines in docs/benchmarks/.

    python3 scripts/bench_charts.py

writes speed.svg, cpu.svg, w6.svg and scale.svg next to the data. Standard library only, so that
the charts can be remade anywhere; the same data gives the same bytes. S1-S3 have no raw lines of
their own: scale.jsonl holds the figures of benchmarks.md's tables (its "source" field says so).
"""

import json
import math
import pathlib
import statistics
from xml.sax.saxutils import escape

DATA = pathlib.Path(__file__).resolve().parent.parent / "docs" / "benchmarks"

WIDTH = 700
LABEL_RIGHT = 180  # row labels end here, bars start 10 px further
BAR_LEFT, BAR_RIGHT = 190, 610  # the rest is for the value at a bar's end
BAR, BAR_GAP, ROW_GAP = 11, 1, 6
CHAR = 6.0  # estimated width of a character at 11 px: no font is embedded
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"

REDISYNC, PEER = "#d95f02", "#7f8c8d"
CLIENT, SERVER = "#1b9e77", "#7570b3"


def load(name):
    with open(DATA / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


class Svg:
    def __init__(self):
        self.parts = []

    def rect(self, x, y, w, h, fill, extra=""):
        self.parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.5):.1f}" height="{h:.1f}" '
                          f'fill="{fill}"{extra}/>')

    def line(self, x1, y1, x2, y2, stroke, extra=""):
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}"{extra}/>')

    def text(self, x, y, content, size=11, anchor="start", weight="normal", fill="#222222"):
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
                          f'font-weight="{weight}" fill="{fill}">{escape(content)}</text>')

    def write(self, path, height):
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write('<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n')
            f.write(f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{WIDTH}" '
                    f'height="{height:.0f}" viewBox="0 0 {WIDTH} {height:.0f}" font-family="{FONT}">\n')
            f.write(f'<rect x="0" y="0" width="{WIDTH}" height="{height:.0f}" fill="#ffffff"/>\n')
            f.write("\n".join(self.parts))
            f.write("\n</svg>\n")


def wrapped(text, columns):
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > columns:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line] if line else lines


def nice_step(top, ticks=5):
    """A step of 1, 2, 2.5 or 5 times a power of ten giving about `ticks` ticks up to `top`."""
    rough = top / ticks
    power = 10 ** math.floor(math.log10(rough))
    return next(power * m for m in (1, 2, 2.5, 5, 10) if power * m >= rough)


def number(v):
    """As the tables of benchmarks.md write it: 11,995 / 113 / 1,895.0 / 114.5 / 4.87."""
    if isinstance(v, int):
        return f"{v:,}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def tick(v, step):
    """A tick's label with as many decimals as the step needs (2.5 -> 1, 0.25 -> 2)."""
    decimals = 0
    while abs(step * 10 ** decimals - round(step * 10 ** decimals)) > 1e-9:
        decimals += 1
    return f"{v:,.{decimals}f}"


def draw_legend(svg, series, y):
    """One swatch per series, wrapping to the next line at the right edge; returns the next y."""
    x = 20
    for name, colour in series:
        w = 24 + CHAR * len(name) + 18
        if x + w > WIDTH - 10:
            x, y = 20, y + 18
        svg.rect(x, y - 9, 16, 11, colour)
        svg.text(x + 22, y, name)
        x += w
    return y + 22


def draw_group(svg, group, series, y):
    """A group's title, reference lines, bars and axis from `y` down; returns the next y."""
    fmt = group.get("format", number)
    svg.text(20, y, group["title"], size=13, weight="bold", fill="#000000")
    y += 10
    top = max(max(v) if isinstance(v, tuple) else v for row in group["rows"] for v in row["values"].values())
    top = max([top] + [x for x, _ in group.get("refs", [])])
    step = nice_step(top)
    top = math.ceil(top / step - 1e-9) * step
    scale = (BAR_RIGHT - BAR_LEFT) / top
    refs = [(BAR_LEFT + x * scale, label) for x, label in group.get("refs", [])]
    for x, label in refs:
        # A label that would run off the page goes left of its line.
        right = x + 3 + CHAR * len(label) <= WIDTH - 5
        svg.text(x + 3 if right else x - 3, y + 8, label, size=10, anchor="start" if right else "end",
                 fill="#c0392b")
    if refs:
        y += 14
    rows_top = y
    colours = dict(series)
    for row in group["rows"]:
        bars = [(name, row["values"][name]) for name, _ in series if name in row["values"]]
        height = len(bars) * (BAR + BAR_GAP) - BAR_GAP
        svg.text(LABEL_RIGHT, y + height / 2 + 4, row["label"], anchor="end",
                 weight="bold" if row.get("bold") else "normal")
        for name, value in bars:
            low, high = value if isinstance(value, tuple) else (0, value)
            svg.rect(BAR_LEFT + low * scale, y, (high - low) * scale, BAR, colours[name])
            text = f"{fmt(low)}–{fmt(high)}" if isinstance(value, tuple) else fmt(high)
            svg.text(BAR_LEFT + high * scale + 4, y + BAR - 2, text, size=10)
            y += BAR + BAR_GAP
        y += ROW_GAP - BAR_GAP
    for x, _ in refs:
        svg.line(x, rows_top - 4, x, y, "#c0392b", ' stroke-width="1.2" stroke-dasharray="4 3"')
    svg.line(BAR_LEFT, y, BAR_RIGHT, y, "#333333")
    for k in range(round(top / step) + 1):
        x = BAR_LEFT + k * step * scale
        svg.line(x, y, x, y + 4, "#333333")
        svg.text(x, y + 15, tick(k * step, step), size=10, anchor="middle", fill="#333333")
    svg.text((BAR_LEFT + BAR_RIGHT) / 2, y + 29, group["unit"], anchor="middle", fill="#333333")
    return y + 52


def bar_chart(path, title, subtitle, series, groups, footer):
    """Horizontal bars in groups stacked down the page, each group on its own linear scale.

    series: [(name, colour)]; a group: {"title", "unit", "rows": [{"label", "bold", "values":
    {series name: value, or (low, high) for a range drawn from low to high}}], optional "format"
    (value -> text) and "refs" ([(x, label)]: dashed lines across the group)."""
    svg = Svg()
    svg.text(20, 28, title, size=16, weight="bold", fill="#000000")
    y = 46
    for line in wrapped(subtitle, 105):
        svg.text(20, y, line, fill="#555555")
        y += 15
    y = draw_legend(svg, series, y + 8)
    for group in groups:
        y = draw_group(svg, group, series, y)
    for line in wrapped(footer, 110):
        svg.text(20, y, line, size=10, fill="#555555")
        y += 14
    svg.write(path, y + 6)
    return path


# Per workload: its title (filled from the run's parameters), its unit, the field of its speed and
# the unit of its CPU per operation.
PEER_WORKLOADS = {
    "W1": ("W1 — uncontended: one task, acquire + release in a row", "acquire + release pairs per second",
           "ops_per_s", "µs of CPU per pair"),
    "W2": ("W2 — {W2_C} tasks of one process on one lock", "critical sections per second", "cs_per_s",
           "µs of CPU per critical section"),
    "W3": ("W3 — {W3_C} tasks on {W3_KEYS:,} locks", "acquire + release pairs per second", "ops_per_s",
           "µs of CPU per pair"),
    "W5": ("W5 — one lock across {processes} processes × {concurrency} tasks", "critical sections per second",
           "cs_per_s", "µs of CPU per critical section"),
}


def title_of(workload, meta, lines):
    return PEER_WORKLOADS[workload][0].format_map({**meta.get("params", {}), **lines[0]})


def peer_rows(peers, w5):
    """Each workload's lines: W1-W3 from the peers run, W5 from its own run (w5.jsonl).

    The rows of the code before a change ("redisync(before...)") compare two builds, not the
    peers: they are left out. A workload without a redisync line (W4) has nothing to compare."""
    lines = [p for p in peers if p.get("workload") in ("W1", "W2", "W3")] + w5
    out = {}
    for w in PEER_WORKLOADS:
        rows = [p for p in lines if p.get("workload") == w and p.get("ok", True)
                and not p["peer"].startswith("redisync(before")]
        if any(r["peer"].startswith("redisync") for r in rows):
            out[w] = rows
    return out


def speed_chart(peers, w5, meta, limits):
    rows = peer_rows(peers, w5)
    groups = []
    for w, lines in rows.items():
        _, unit, field, _ = PEER_WORKLOADS[w]
        group = {"title": title_of(w, meta, lines), "unit": unit, "rows": [
            {"label": r["peer"], "bold": r["peer"].startswith("redisync"),
             "values": {"redisync" if r["peer"].startswith("redisync") else "peer libraries": r[field]}}
            for r in lines]}
        if w == "W1" and "evalsha -c1 -P1" in limits:
            ceiling = limits["evalsha -c1 -P1"] / 2
            group["refs"] = [(ceiling, f"W1 floor: evalsha -c1 -P1 / 2 = {ceiling:,.0f}")]
        groups.append(group)
    return bar_chart(
        DATA / "speed.svg", "redisync against the peers: operations per second",
        "Higher is better. Each workload on its own scale; rows of one run only (the machine is noisy, "
        "±30% from run to run).",
        [("redisync", REDISYNC), ("peer libraries", PEER)], groups,
        f"Data: docs/benchmarks/peers.jsonl (W1-W3, run of {meta.get('date', '?')}, {meta.get('nproc', '?')} "
        "vCPUs, redis " + meta.get("redis_version", "?") + ") and docs/benchmarks/w5.jsonl (W5). "
        "Remade by python3 scripts/bench_charts.py.")


def cpu_chart(peers, w5, meta):
    groups = []
    for w, lines in peer_rows(peers, w5).items():
        unit = PEER_WORKLOADS[w][3]
        groups.append({"title": title_of(w, meta, lines), "unit": unit, "rows": [
            {"label": r["peer"], "bold": r["peer"].startswith("redisync"),
             "values": {"client process": r["client_cpu_us_per_op"], "redis-server": r["server_cpu_us_per_op"]}}
            for r in lines if "client_cpu_us_per_op" in r and "server_cpu_us_per_op" in r]})
    return bar_chart(
        DATA / "cpu.svg", "CPU per operation: the client process and redis-server",
        "Lower is better. CPU time of the benchmark's client process and of redis-server over the run, "
        "divided by its operations; each workload on its own scale.",
        [("client process", CLIENT), ("redis-server", SERVER)], groups,
        f"Data: docs/benchmarks/peers.jsonl (W1-W3, run of {meta.get('date', '?')}) and "
        "docs/benchmarks/w5.jsonl (W5). Remade by python3 scripts/bench_charts.py.")


def w6_chart(w6):
    one = [r["read_cs_ratio_to_baseline"] for r in w6]
    two = [r["across_processes"]["read_cs_ratio_to_baseline"] for r in w6 if "across_processes" in r]
    one_name = f"1 process × 16 tasks (median {statistics.median(one):.2f}×)"
    two_name = f"2 processes × 8 tasks (median {statistics.median(two):.2f}×)"
    rows = []
    for i, r in enumerate(w6, 1):
        values = {one_name: r["read_cs_ratio_to_baseline"]}
        if "across_processes" in r:
            values[two_name] = r["across_processes"]["read_cs_ratio_to_baseline"]
        rows.append({"label": f"run {i}", "values": values})
    group = {"title": f"W6 — read-mostly (90% reads), {len(w6)} runs in a row of one binary",
             "unit": "read critical sections per second, × the reentrant lock's in the same run",
             "rows": rows, "format": lambda v: f"{v:.2f}×", "refs": [(5, "target 5×")]}
    return bar_chart(
        DATA / "w6.svg", "W6: the read-write lock against the reentrant lock",
        "Higher is better. The same 8,000 critical sections under the read-write lock and, as the "
        "baseline, under the reentrant lock, on one server in one run.",
        [(one_name, REDISYNC), (two_name, "#e6ab02")], [group],
        "Data: docs/benchmarks/w6.jsonl (read_cs_ratio_to_baseline, and across_processes's). "
        "Remade by python3 scripts/bench_charts.py.")


def scale_chart(scale):
    s1 = [r for r in scale if r["workload"] == "S1"]
    reads = [r for r in scale if r["workload"] == "S2" and "server_us_per_renewed_hold" in r]
    s3 = [r for r in scale if r["workload"] == "S3"]
    drain, cpu, renew, before, after = ("S1: drain", "#1b9e77"), ("S1: client CPU", "#66a61e"), \
        ("S2: range of two runs", "#7570b3"), ("S3: before the kills", "#7f8c8d"), ("S3: after the kills", "#d95f02")
    groups = [{
        "title": f"S1 — {s1[0]['n']:,} waiters on one lock, drained once its holder lets go",
        "unit": "seconds", "format": lambda v: f"{v:.2f} s",
        "rows": [{"label": "cold script cache" if r["cold"] else "warm script cache",
                  "values": {drain[0]: r["drain_s"], cpu[0]: r["client_cpu_s"]}} for r in s1]}, {
        "title": "S2 — renewing held reads against locks (before: " + ", ".join(sorted(
            {r["build"][len("before ("):-1] for r in reads if r["build"].startswith("before (")})) + ")",
        "unit": "Redis µs per renewed hold",
        "rows": [{"label": f"{r['holds']}" + (f", {r['readers_per_lock']:,} per lock" if r["readers_per_lock"] else "")
                  + (", before" if r["build"].startswith("before") else ""),
                  "bold": r["build"] == "current",
                  "values": {renew[0]: tuple(r["server_us_per_renewed_hold"])}} for r in reads]}]
    for r in s3:
        title = f"S3 — {r['kills']} connection kills {r['interval_ms']} ms apart, {r['waiters']:,} waiters: "
        groups.append({"title": title + "file descriptors", "unit": "open file descriptors", "format": str,
                       "rows": [{"label": "client process",
                                 "values": {before[0]: r["fds_before"], after[0]: r["fds_after"]}}]})
        groups.append({"title": title + "memory", "unit": "resident set size, KB",
                       "rows": [{"label": "client process",
                                 "values": {before[0]: r["rss_before_kb"], after[0]: r["rss_after_kb"]}}]})
    return bar_chart(
        DATA / "scale.svg", "Scale: S1-S3",
        "S1 and S2: lower is better; S3: the same before and after is the point (no leak). "
        "Each workload on its own scale.",
        [drain, cpu, renew, before, after], groups,
        "Data: docs/benchmarks/scale.jsonl, transcribed from " + s1[0]["source"]
        + " (no raw lines were kept). Remade by python3 scripts/bench_charts.py.")


def main():
    peers = load("peers.jsonl")
    meta = next((p for p in peers if p.get("peer") == "_meta"), {})
    limits = {p["test"]: p["rps"] for p in peers if p.get("workload") == "LIMIT"}
    written = [speed_chart(peers, load("w5.jsonl"), meta, limits), cpu_chart(peers, load("w5.jsonl"), meta),
               w6_chart(load("w6.jsonl")), scale_chart(load("scale.jsonl"))]
    for path in written:
        print(f"wrote {path.relative_to(DATA.parent.parent)}")


if __name__ == "__main__":
    main()
