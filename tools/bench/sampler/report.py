#!/usr/bin/env python3
"""Flat profile from a folder the sampler wrote: the share of samples per library and per function.
Run it on the machine that took the samples, where the same binaries and libraries are; it reads
their symbol tables with `nm`. A library stripped to its dynamic table (libc, the driver) names
only exported functions: time in its internal ones counts under the exported function before them
(libc's `_int_malloc` shows as `__default_morecore`, for instance)."""
import bisect
import collections
import subprocess
import sys


def symbols(path):
    """(address, name) pairs of the functions in `path`, sorted, from its static or dynamic table."""
    table = []
    for flags in (["-C", "--defined-only"], ["-C", "-D", "--defined-only"]):
        listing = subprocess.run(["nm", *flags, path], capture_output=True, text=True).stdout
        for line in listing.splitlines():
            parts = line.split(" ", 2)
            if len(parts) == 3 and parts[1] in "TtWw":
                table.append((int(parts[0], 16), parts[2]))
        if table:
            break
    table.sort()
    return table


def main(folder, shown=40):
    mappings = []
    for line in open(f"{folder}/maps.txt"):
        fields = line.split()
        if len(fields) < 6 or "x" not in fields[1]:
            continue
        low, high = (int(value, 16) for value in fields[0].split("-"))
        mappings.append((low, high, int(fields[2], 16), fields[5]))
    samples = [int(line, 16) for line in open(f"{folder}/samples.txt") if line.strip()]
    tables = {}
    per_library = collections.Counter()
    per_function = collections.Counter()
    for address in samples:
        found = next((m for m in mappings if m[0] <= address < m[1]), None)
        if found is None:
            per_library["(unknown)"] += 1
            continue
        low, _, offset, path = found
        per_library[path.rsplit("/", 1)[-1]] += 1
        if path not in tables:
            tables[path] = symbols(path)
        table = tables[path]
        # Symbol values are file-relative for shared objects and position-independent binaries.
        relative = address - low + offset
        index = bisect.bisect_right(table, (relative, "\uffff")) - 1
        name = table[index][1] if index >= 0 else "?"
        per_function[f"{name[:100]}  [{path.rsplit('/', 1)[-1]}]"] += 1
    total = max(len(samples), 1)
    print(f"{len(samples)} samples")
    print("by library:")
    for name, count in per_library.most_common(10):
        print(f"  {100 * count / total:5.1f}%  {name}")
    print("by function:")
    for name, count in per_function.most_common(shown):
        print(f"  {100 * count / total:5.1f}%  {name}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: report.py FOLDER [ROWS]")
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40)
