#!/usr/bin/env python3
"""Draws docs/cuda_bench.svg from a tandem_cuda_bench JSON report: each tandem figure beside the
plain-CUDA figure it is compared with, as throughput relative to plain CUDA. No third-party
packages: the SVG is written by hand."""
import json
import sys

# (title, tandem run, plain-CUDA run, goal as the least speed relative to plain CUDA, or None);
# for a paired benchmark, the plain side names the counter holding the run's own ratio of tandem
# time to plain time.
LAUNCH_GOAL = 1 / 1.15
PAIRS = [
    ("allocate+free 1 MiB vs cudaMallocAsync", "tandem_allocate_free/1048576/real_time",
     "cuda_malloc_async_free/1048576/real_time", 10.0),
    ("allocate+free 1 MiB vs cudaMalloc", "tandem_allocate_free/1048576/real_time",
     "cuda_malloc_free/1048576/real_time", None),
    ("empty launch vs raw launch, paired", "launch_pair_empty/manual_time", "ratio", LAUNCH_GOAL),
    ("launch with two bindings, paired", "launch_pair_bound_copy/manual_time", "ratio",
     LAUNCH_GOAL),
    ("in-place update of a binding, paired", "launch_pair_in_place_axpy/manual_time", "ratio",
     LAUNCH_GOAL),
    ("empty launch vs raw launch", "tandem_launch_empty/real_time", "raw_launch_empty/real_time",
     LAUNCH_GOAL),
    ("launch with two bindings vs raw launch", "tandem_launch_bound_copy/real_time",
     "raw_launch_bound_copy/real_time", LAUNCH_GOAL),
    ("in-place update of a binding vs raw launch", "tandem_launch_in_place_axpy/real_time",
     "raw_launch_in_place_axpy/real_time", LAUNCH_GOAL),
    ("peer-reading kernel vs raw pointer", "tandem_peer_read_kernel/real_time",
     "raw_peer_read_kernel/real_time", 0.95),
    ("peer copy vs cudaMemcpyPeerAsync", "tandem_peer_copy/real_time", "raw_peer_copy/real_time",
     0.95),
]


def main(report_path, svg_path):
    with open(report_path) as report:
        runs = json.load(report)["benchmarks"]
    medians = {run["run_name"]: run for run in runs if run.get("aggregate_name") == "median"}
    rows = []
    for title, tandem, plain, goal in PAIRS:
        if tandem in medians and plain in medians[tandem]:
            rows.append((title, 1 / medians[tandem][plain], goal))
        elif tandem in medians and plain in medians:
            rows.append((title, medians[plain]["real_time"] / medians[tandem]["real_time"], goal))
    width, bar_height, left = 760, 34, 300
    scale = (width - left - 80) / max(max(speed for _, speed, _ in rows), 1.0)
    height = 60 + bar_height * len(rows)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             'font-family="sans-serif" font-size="13">',
             '<text x="10" y="20" font-weight="bold">tandem speed relative to plain CUDA '
             '(higher is faster; 1.0 = equal; orange: goal missed)</text>']
    one = left + scale
    for index, (title, speed, goal) in enumerate(rows):
        y = 40 + index * bar_height
        parts.append(f'<text x="10" y="{y + 18}">{title}</text>')
        parts.append(f'<rect x="{left}" y="{y + 4}" width="{speed * scale:.1f}" height="20" '
                     f'fill="{"#4a8" if goal is None or speed >= goal else "#d84"}"/>')
        parts.append(f'<text x="{left + speed * scale + 6:.1f}" y="{y + 18}">{speed:.2f}x</text>')
    parts.append(f'<line x1="{one:.1f}" y1="30" x2="{one:.1f}" y2="{height - 10}" '
                 'stroke="#333" stroke-dasharray="4 3"/>')
    parts.append('</svg>')
    with open(svg_path, "w") as svg:
        svg.write("\n".join(parts) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
