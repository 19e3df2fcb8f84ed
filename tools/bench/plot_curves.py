#!/usr/bin/env python3
"""Draws the cost curves (tools/bench/curves.hpp) from a Google Benchmark JSON report of
tandem_bench or tandem_cuda_bench: time per operation against the size the family held, log x
and log y, one line per family; the host bytes per object of the memory family are listed under
the plot. No third-party packages: the SVG is written by hand.

    tools/bench/plot_curves.py REPORT.json OUT.svg [TITLE]

`curve_points` is what tools/bench/curves reads its table from."""
import json
import math
import sys

# What each time family is called in the plot, after its backend prefix ("sim_curve_").
TITLES = {
    "launch_vs_allocations": "launch, N live allocations",
    "launch_vs_claims": "launch, N claims on its input",
    "launch_vs_pending": "launch, N pending launches",
    "allocate_free_vs_allocations": "allocate+free, N live allocations",
    "read_vs_pending_sources": "4 KiB read, K sources pending (x = K+1)",
}
# The memory family's counters, in bytes per object.
BYTE_COUNTERS = ("bytes_per_allocation", "bytes_per_claim", "bytes_per_pending_launch")
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]


def family_of(run_name):
    """`sim_curve_launch_vs_claims/1000/iterations:3/manual_time` -> `launch_vs_claims`."""
    name = run_name.split("/")[0]
    return name.split("_curve_", 1)[1] if "_curve_" in name else None


def curve_points(report_path):
    """{family: [(size, run)]}, sorted by size: each run the median over the repetitions where
    the report has aggregates, the run itself otherwise. Runs skipped with an error are left out."""
    with open(report_path) as report:
        runs = json.load(report)["benchmarks"]
    has_medians = any(run.get("aggregate_name") == "median" for run in runs)
    families = {}
    for run in runs:
        if has_medians != (run.get("aggregate_name") == "median"):
            continue
        family = family_of(run.get("run_name", run["name"]))
        if family is None or run.get("error_occurred") or "size" not in run:
            continue
        families.setdefault(family, []).append((run["size"], run))
    for points in families.values():
        points.sort(key=lambda point: point[0])
    return families


def log_ticks(low, high):
    """Powers of ten from below `low` to above `high`."""
    return [10.0 ** power for power in range(math.floor(math.log10(low)),
                                             math.ceil(math.log10(high)) + 1)]


def tick_label(value, unit=""):
    for bound, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= bound:
            return f"{value / bound:g}{suffix}{unit}"
    return f"{value:g}{unit}"


def time_label(nanoseconds):
    for bound, suffix in ((1e6, "ms"), (1e3, "us")):
        if nanoseconds >= bound:
            return f"{nanoseconds / bound:g} {suffix}"
    return f"{nanoseconds:g} ns"


class Axes:
    """Maps sizes and nanoseconds onto the plot area, both on log scales."""

    def __init__(self, xs, ys, left, top, width, height):
        self.x_ticks, self.y_ticks = log_ticks(min(xs), max(xs)), log_ticks(min(ys), max(ys))
        self.left, self.top, self.width, self.height = left, top, width, height

    def x(self, value):
        low, high = math.log10(self.x_ticks[0]), math.log10(self.x_ticks[-1])
        return self.left + (math.log10(value) - low) / max(high - low, 1) * self.width

    def y(self, value):
        low, high = math.log10(self.y_ticks[0]), math.log10(self.y_ticks[-1])
        return self.top + self.height - (math.log10(value) - low) / max(high - low, 1) * self.height

    def grid(self):
        parts = []
        for tick in self.x_ticks:
            x = self.x(tick)
            parts.append(f'<line x1="{x:.1f}" y1="{self.top}" x2="{x:.1f}" '
                         f'y2="{self.top + self.height}" stroke="#ddd"/>')
            parts.append(f'<text x="{x:.1f}" y="{self.top + self.height + 16}" '
                         f'text-anchor="middle">{tick_label(tick)}</text>')
        for tick in self.y_ticks:
            y = self.y(tick)
            parts.append(f'<line x1="{self.left}" y1="{y:.1f}" x2="{self.left + self.width}" '
                         f'y2="{y:.1f}" stroke="#ddd"/>')
            parts.append(f'<text x="{self.left - 6}" y="{y + 4:.1f}" '
                         f'text-anchor="end">{time_label(tick)}</text>')
        return parts


def time_curves(families):
    """[(family, [(x, ns)])] of the time families: x is the size, K+1 for the read family (a
    log axis has no 0)."""
    curves = []
    for family in TITLES:  # In the order of TITLES, whatever order the report ran them in.
        points = families.get(family, [])
        shift = 1 if family == "read_vs_pending_sources" else 0
        curve = [(size + shift, run["ns_per_op"]) for size, run in points if run["ns_per_op"] > 0]
        if curve:
            curves.append((family, curve))
    return curves


def byte_lines(families):
    """One line of text per byte counter: the figure at each size measured."""
    lines = []
    for counter in BYTE_COUNTERS:
        figures = [f"{run[counter]:.0f} B at {size:g}" for points in families.values()
                   for size, run in points if counter in run]
        if figures:
            lines.append(f"{counter.replace('_', ' ')}: " + ", ".join(figures))
    return lines


def draw(families, title):
    curves, notes = time_curves(families), byte_lines(families)
    if not curves:
        raise SystemExit("plot_curves: no cost-curve family in the report")
    width, left, top, plot_width, plot_height = 900, 80, 40, 520, 400
    axes = Axes([x for _, curve in curves for x, _ in curve],
                [y for _, curve in curves for _, y in curve], left, top, plot_width, plot_height)
    height = top + plot_height + 50 + 18 * len(notes)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             'font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="10" y="20" font-weight="bold" font-size="13">{title}</text>']
    parts += axes.grid()
    parts.append(f'<text x="{left + plot_width / 2}" y="{top + plot_height + 34}" '
                 'text-anchor="middle">size held fixed (N or K+1)</text>')
    for index, (family, curve) in enumerate(curves):
        colour = COLOURS[index % len(COLOURS)]
        path = " ".join(f"{axes.x(x):.1f},{axes.y(y):.1f}" for x, y in curve)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        parts += [f'<circle cx="{axes.x(x):.1f}" cy="{axes.y(y):.1f}" r="3" fill="{colour}"/>'
                  for x, y in curve]
        legend_y = top + 10 + index * 20
        parts.append(f'<line x1="{left + plot_width + 20}" y1="{legend_y}" '
                     f'x2="{left + plot_width + 40}" y2="{legend_y}" stroke="{colour}" '
                     'stroke-width="2"/>')
        parts.append(f'<text x="{left + plot_width + 46}" y="{legend_y + 4}">'
                     f'{TITLES[family]}</text>')
    for index, note in enumerate(notes):
        parts.append(f'<text x="10" y="{top + plot_height + 58 + 18 * index}">{note}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main(report_path, svg_path, title="tandem cost curves: time per operation (log-log)"):
    svg = draw(curve_points(report_path), title)
    with open(svg_path, "w") as out:
        out.write(svg)


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
