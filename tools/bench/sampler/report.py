#!/usr/bin/env python3
"""Flat profile from a folder the sampler wrote: the share of samples per library and per function.
Run it on the machine that took the samples, where the same binaries and libraries are; it reads
their symbol tables with `nm`. A library stripped to its dynamic table (libc, the driver) names
only exported functions: time in its internal ones counts under the exported function before them
(libc's `_int_malloc` shows as `__default_morecore`, for instance). With `--instructions=N` it also
lists, for the N busiest functions of unstripped binaries, the most sampled instructions: where a
store-forwarding stall or a slow atomic shows."""
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


def hottest_instructions(per_address, per_function_addresses, functions, total):
    """For each of `functions`, its three most sampled addresses with the instructions just before
    them (a sample lands on the instruction after the one that stalled), from `objdump`."""
    for key in functions:
        print(f"\n{key}")
        for (path, relative), count in sorted(
                ((at, per_address[at]) for at in per_function_addresses[key]), key=lambda item: -item[1])[:3]:
            listing = subprocess.run(
                ["objdump", "-d", "-C", "--no-show-raw-insn", f"--start-address={relative - 24:#x}",
                 f"--stop-address={relative + 1:#x}", path], capture_output=True, text=True).stdout
            lines = [line.strip() for line in listing.splitlines() if line[:1] == " " and ":" in line]
            print(f"  {100 * count / total:5.2f}%  at {relative:#x}, after:")
            for line in lines[-5:-1]:
                print(f"           {line[:110]}")


def main(folder, shown=40, instructions=0):
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
    per_address = collections.Counter()
    per_function_addresses = collections.defaultdict(set)
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
        key = f"{name[:100]}  [{path.rsplit('/', 1)[-1]}]"
        per_function[key] += 1
        per_address[(path, relative)] += 1
        per_function_addresses[key].add((path, relative))
    total = max(len(samples), 1)
    print(f"{len(samples)} samples")
    print("by library:")
    for name, count in per_library.most_common(10):
        print(f"  {100 * count / total:5.1f}%  {name}")
    print("by function:")
    for name, count in per_function.most_common(shown):
        print(f"  {100 * count / total:5.1f}%  {name}")
    if instructions:
        # Only functions of binaries with a full symbol table: a stripped library's names are
        # only the nearest exported ones.
        ours = [key for key, _ in per_function.most_common() if not key.endswith(".so.6]")
                and "libcuda" not in key][:instructions]
        hottest_instructions(per_address, per_function_addresses, ours, total)


if __name__ == "__main__":
    arguments = [argument for argument in sys.argv[1:] if not argument.startswith("--instructions=")]
    hot = [int(argument.split("=", 1)[1]) for argument in sys.argv[1:]
           if argument.startswith("--instructions=")]
    if not arguments:
        sys.exit("usage: report.py FOLDER [ROWS] [--instructions=FUNCTIONS]")
    main(arguments[0], int(arguments[1]) if len(arguments) > 1 else 40, hot[0] if hot else 0)
