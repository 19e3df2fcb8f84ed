#!/usr/bin/env python3
"""Checks of `tandem explore --ranks N`, programs on a job simulated in one process. The oracle is
the byte model's, as for plain explore; what this file checks is the explorer around it: a
violation planted in a program of several ranks is found, shrunk and written as a scenario of
ranks that `tandem replay` runs (as a job of processes) and that fails there too; a kept program
replays and passes; worker processes report what one process does; and ranks that cannot split
the devices are refused before anything runs."""

import json
import os
import re
import subprocess
import sys
import tempfile


def run(tool, *args):
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=300)


def fail(message):
    print("FAILED: " + message)
    sys.exit(1)


def explore(tool, folder, *args):
    """Exit code and output lines of an explore run, timing and folder written out."""
    result = run(tool, "explore", "--out", folder, *args)
    lines = [re.sub(r" in [0-9.]+ s \([0-9]+ programs per second\)", "", line).replace(folder, "OUT")
             for line in result.stdout.splitlines()]
    return result.returncode, lines, result.stderr


def check_planted_violation(tool, folder, ranks, seed):
    """A wrong byte planted in one program is reported with a rerun that names the ranks, shrunk
    to the one read that shows it, and written as a scenario of ranks that fails on replay."""
    out = os.path.join(folder, f"planted-{ranks}")
    code, lines, errors = explore(tool, out, "--runs", "20", "--seed", str(seed - 5), "--ranks",
                                  str(ranks), "--jobs", "1", "--plant-violation", str(seed))
    rerun = f"--ranks {ranks} "
    if code != 1 or not any(line.startswith(f"violation: program seed {seed} ") and rerun in line
                            for line in lines):
        fail(f"--ranks {ranks}: the planted violation was not reported (exit {code}): {lines} {errors}")
    if not any(re.match(r"shrunk from \d+ to 1 units", line) for line in lines):
        fail(f"--ranks {ranks}: the planted violation was not shrunk to one unit: {lines}")
    path = os.path.join(out, f"explore-{seed}.yaml")
    with open(path) as file:
        text = file.read()
    if f"ranks: {ranks}" not in text:
        fail(f"--ranks {ranks}: the shrunk program does not say its ranks:\n{text}")
    replayed = run(tool, "replay", path)
    if replayed.returncode != 1 or "FAIL" not in replayed.stdout:
        fail(f"--ranks {ranks}: the shrunk program does not fail on replay: {replayed.stdout}")


def check_kept_program_replays(tool, folder):
    """A program kept by --keep is a scenario of ranks that replays, as a job of processes, and
    passes: the driver's order in one process is the barriers' order across processes."""
    out = os.path.join(folder, "kept")
    code, lines, errors = explore(tool, out, "--runs", "2", "--seed", "31", "--ranks", "2",
                                  "--devices", "4", "--keep", "2", "--jobs", "1")
    if code != 0:
        fail(f"--keep with --ranks: exit {code}: {lines} {errors}")
    for seed in (31, 32):
        replayed = run(tool, "replay", os.path.join(out, f"program-{seed}.yaml"))
        if replayed.returncode != 0:
            fail(f"kept program {seed} does not pass on replay: {replayed.stdout}{replayed.stderr}")


def check_workers_agree(tool, folder):
    """Worker processes run the same programs, faults and verdicts as one process."""
    args = ("--runs", "40", "--seed", "500", "--ranks", "2")
    serial = explore(tool, os.path.join(folder, "serial"), *args, "--jobs", "1")
    parallel = explore(tool, os.path.join(folder, "parallel"), *args, "--jobs", "2")
    if serial[0] != 0 or serial[:2] != parallel[:2]:
        fail(f"explore --ranks 2 --jobs 2 differs from --jobs 1:\n{serial}\n{parallel}")
    document = json.loads(run(tool, "explore", "--runs", "2", "--ranks", "4", "--json",
                              "--out", folder).stdout)
    if document.get("ranks") != 4 or document.get("devices") != 4:
        fail(f"--json does not give the ranks and the devices they split: {document}")


def check_refused(tool):
    """Ranks that cannot run are a usage error naming the option, before anything runs."""
    for args, needle in ((["--ranks", "0"], "--ranks: must be from 1 to 16, not 0"),
                         (["--ranks", "17"], "--ranks: must be from 1 to 16"),
                         (["--ranks", "3", "--devices", "4"], "--ranks 3 does not split --devices 4"),
                         (["--ranks", "2", "--devices", "3"], "--ranks 2 does not split --devices 3")):
        result = run(tool, "explore", "--runs", "1", *args)
        if result.returncode != 2 or needle not in result.stderr or result.stdout:
            fail(f"explore {' '.join(args)}: exit {result.returncode}: {result.stdout}{result.stderr}")


def main():
    tool = sys.argv[1]
    with tempfile.TemporaryDirectory() as folder:
        check_planted_violation(tool, folder, 2, 17)
        check_planted_violation(tool, folder, 4, 23)
        check_kept_program_replays(tool, folder)
        check_workers_agree(tool, folder)
    check_refused(tool)
    print("explore --ranks: ok")


if __name__ == "__main__":
    main()
