#!/usr/bin/env python3
"""Checks of `tandem explore --ranks N`, programs on a job simulated in one process. The oracle is
the byte model's, as for plain explore, rank deaths included; what this file checks is the
explorer around it: a violation planted in a program of several ranks is found, shrunk and
written as a scenario of ranks that `tandem replay` runs and that fails there too (one planted
in a rank's death keeps the death); kept programs replay and pass, as a job of processes or,
with a death, in one process; worker processes report what one process does; connections cut
between living ranks (--cut-percent) cut off the higher rank as the model says, and the programs
replay; and a malformed abandon or cut step, or ranks that cannot split the devices, are refused
before anything runs."""

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


def check_planted_loss(tool, out, seed, units, step, rank, *args):
    """A violation planted in program `seed` (of `units` units) that loses rank `rank` by `step`
    (the last read expecting the loss expects it not lost) shrinks to the loss, the unit that
    read the lost memory and the read, and the file, a job simulated in one process, fails on
    replay as it failed in explore. Returns the explorer's output lines."""
    code, lines, errors = explore(tool, out, *args, "--jobs", "1", "--plant-violation", str(seed))
    if code != 1 or f"shrunk from {units} to 3 units; written to OUT/explore-{seed}.yaml" not in lines:
        fail(f"the planted loss by '{step}' was not found and shrunk to 3 units (exit {code}): {lines} {errors}")
    path = os.path.join(out, f"explore-{seed}.yaml")
    with open(path) as file:
        text = file.read()
    if step not in text or f'"of rank {rank} is not lost"' not in text:
        fail(f"the shrunk program lost '{step}' or the planted read:\n{text}")
    replayed = run(tool, "replay", path)
    if replayed.returncode != 1 or \
            f"expected the report to contain 'of rank {rank} is not lost'" not in replayed.stdout:
        fail(f"the shrunk loss by '{step}' does not fail on replay as in explore: {replayed.stdout}")
    return lines


def check_planted_death(tool, folder):
    """A planted violation that denies an abandoned rank's loss (`check_planted_loss`)."""
    check_planted_loss(tool, os.path.join(folder, "planted-death"), 36, 116, "- abandon: {rank: 0}",
                       0, "--runs", "3", "--seed", "34", "--ranks", "2", "--devices", "4")


def kept_programs(tool, out, seed, runs, *args):
    """Runs `runs` programs from `seed` (with `args`), keeping every one, and checks that each
    kept file replays and passes. Returns the explorer's output lines and the files' texts."""
    code, lines, errors = explore(tool, out, "--runs", str(runs), "--seed", str(seed), *args,
                                  "--keep", str(runs), "--jobs", "1")
    if code != 0:
        fail(f"--keep with {args}: exit {code}: {lines} {errors}")
    texts = []
    for each in range(seed, seed + runs):
        path = os.path.join(out, f"program-{each}.yaml")
        with open(path) as file:
            texts.append(file.read())
        replayed = run(tool, "replay", path)
        if replayed.returncode != 0:
            fail(f"kept program {each} does not pass on replay: {replayed.stdout}{replayed.stderr}")
    return lines, texts


def check_kept_programs_replay(tool, folder):
    """Programs kept by --keep are scenarios of ranks that replay and pass: those without a
    death as a job of processes (the driver's order in one process is the barriers' order
    across processes), those with one in one process; a death's reads expect the loss."""
    _, texts = kept_programs(tool, os.path.join(folder, "kept"), 31, 6, "--ranks", "2",
                             "--devices", "4")
    deaths = sum(text.count("- abandon: {rank: ") for text in texts)
    lost_reads = sum(len(re.findall(r'- read: .*"of rank [01] is lost"', text)) for text in texts)
    # Seeds 34 to 36 abandon a rank, and 35 and 36 read what its loss claimed.
    if deaths != 3 or lost_reads < 2:
        fail(f"seeds 31 to 36 abandon {deaths} ranks and {lost_reads} reads expect a loss")


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


def check_json_gives(tool, folder, option, value, key):
    """A run of two ranks with `option value` gives `value` as `key` of its --json document."""
    document = json.loads(run(tool, "explore", "--runs", "1", "--ranks", "2", "--json",
                              option, str(value), "--out", folder).stdout)
    if document.get(key) != value:
        fail(f"--json does not give {option} as {key}: {document}")


def check_delayed_frames(tool, folder):
    """Frames between ranks delayed from the seed change no outcome: the same programs pass with
    the same faults as without delays, and a violation's rerun names the delay."""
    args = ("--runs", "40", "--seed", "700", "--ranks", "2", "--jobs", "1")
    plain = explore(tool, os.path.join(folder, "plain"), *args)
    delayed = explore(tool, os.path.join(folder, "delayed"), *args, "--message-delay-us", "300")
    # The first line names the run (the delay with it); the rest says what the programs did.
    if plain[0] != 0 or delayed[0] != 0 or plain[1][1:] != delayed[1][1:]:
        fail(f"delayed frames changed what explore found:\n{plain}\n{delayed}")
    if not any("delayed up to 300 us" in line for line in delayed[1]):
        fail(f"the run does not say its frames are delayed: {delayed[1]}")
    out = os.path.join(folder, "planted-delayed")
    code, lines, errors = explore(tool, out, "--runs", "3", "--seed", "14", "--ranks", "2",
                                  "--jobs", "1", "--message-delay-us", "100",
                                  "--plant-violation", "16")
    if code != 1 or not any("--ranks 2 --message-delay-us 100 " in line for line in lines):
        fail(f"a violation under delays does not rerun with them (exit {code}): {lines} {errors}")
    check_json_gives(tool, folder, "--message-delay-us", 50, "message_delay_us")


def check_cut_connections(tool, folder):
    """Connections cut between living ranks, drawn from the seed: the programs pass against the
    model (the higher rank cut off, its memory lost to the others with the lost connection
    named), the kept ones replay in one process and pass, a planted denial of a cut-off rank's
    loss is found as a death's is (`check_planted_loss`), and the run names the option, in its
    first line, its reruns and its JSON."""
    lines, texts = kept_programs(tool, os.path.join(folder, "cut"), 1, 8, "--ranks", "3",
                                 "--cut-percent", "3")
    if not any("a unit cuts a connection between two of them with a chance of 3%" in line
               for line in lines):
        fail(f"--cut-percent 3: the run does not say it cuts connections: {lines}")
    if not all("--cut-percent 3" in text for text in texts):
        fail("a kept program does not say it was drawn with --cut-percent 3")
    cuts = sum(len(re.findall(r"- cut: \{ranks: \[[0-2], [0-2]\]\}", text)) for text in texts)
    cut_reads = sum(len(re.findall(r'- read: .*"was cut off from the job: its connection to rank',
                                   text)) for text in texts)
    if cuts < 8 or cut_reads < 8:
        fail(f"seeds 1 to 8 cut {cuts} connections and {cut_reads} reads expect a cut-off rank")
    lines = check_planted_loss(tool, os.path.join(folder, "planted-cut"), 41, 112,
                               "- cut: {ranks: [1, 2]}", 2, "--runs", "3", "--seed", "40",
                               "--ranks", "3", "--cut-percent", "3")
    if not any("--ranks 3 --cut-percent 3 " in line for line in lines):
        fail(f"the rerun of a violation with cuts does not name them: {lines}")
    check_json_gives(tool, folder, "--cut-percent", 7, "cut_percent")


def check_malformed_cut(tool, folder):
    """A cut step outside a job, of a rank the job does not have, of one rank twice or not of
    two ranks is malformed: said with its line and column, and nothing runs."""
    for devices, ranks, needle in (("{count: 2}", "[0, 1]", "needs a job of 2 ranks or more"),
                                   ("{count: 2, ranks: 2}", "[0, 2]", "expected a rank below 2"),
                                   ("{count: 2, ranks: 2}", "[1, 1]", "expected two different ranks"),
                                   ("{count: 3, ranks: 3}", "[0, 1, 2]", "as [A, B]")):
        path = os.path.join(folder, "cut.yaml")
        with open(path, "w") as file:
            file.write(f"name: x\ndevices: {devices}\nsteps:\n  - cut: {{ranks: {ranks}}}\n")
        result = run(tool, "replay", path)
        if result.returncode != 2 or "cut.yaml:4:" not in result.stderr or needle not in result.stderr:
            fail(f"cut of {ranks} in {devices}: exit {result.returncode}: {result.stderr}")


def check_malformed_abandon(tool, folder):
    """An abandon step outside a job, or of a rank the job does not have, is malformed: said
    with its line and column, and nothing runs."""
    for devices, rank, needle in (("{count: 2}", 1, "needs a job of 2 ranks or more"),
                                  ("{count: 2, ranks: 2}", 2, "expected a rank below 2")):
        path = os.path.join(folder, "abandon.yaml")
        with open(path, "w") as file:
            file.write(f"name: x\ndevices: {devices}\nsteps:\n  - abandon: {{rank: {rank}}}\n")
        result = run(tool, "replay", path)
        if result.returncode != 2 or f"abandon.yaml:4:" not in result.stderr or needle not in result.stderr:
            fail(f"abandon of rank {rank} in {devices}: exit {result.returncode}: {result.stderr}")


def check_refused(tool):
    """Ranks that cannot run are a usage error naming the option, before anything runs."""
    for args, needle in ((["--ranks", "0"], "--ranks: must be from 1 to 16, not 0"),
                         (["--ranks", "17"], "--ranks: must be from 1 to 16"),
                         (["--ranks", "3", "--devices", "4"], "--ranks 3 does not split --devices 4"),
                         (["--ranks", "2", "--devices", "3"], "--ranks 2 does not split --devices 3"),
                         (["--message-delay-us", "5"], "delays frames between ranks: give --ranks 2"),
                         (["--cut-percent", "5"], "cuts connections between ranks: give --ranks 2"),
                         (["--ranks", "2", "--cut-percent", "101"], "--cut-percent: must be from 0 to 100"),
                         (["--ranks", "2", "--message-delay-us", "1000001"],
                          "--message-delay-us: must be from 0 to 1000000")):
        result = run(tool, "explore", "--runs", "1", *args)
        if result.returncode != 2 or needle not in result.stderr or result.stdout:
            fail(f"explore {' '.join(args)}: exit {result.returncode}: {result.stdout}{result.stderr}")


def main():
    tool = sys.argv[1]
    with tempfile.TemporaryDirectory() as folder:
        # Seeds whose programs abandon no rank: the planted byte shrinks to its one read.
        check_planted_violation(tool, folder, 2, 16)
        check_planted_violation(tool, folder, 4, 22)
        check_planted_death(tool, folder)
        check_kept_programs_replay(tool, folder)
        check_malformed_abandon(tool, folder)
        check_malformed_cut(tool, folder)
        check_cut_connections(tool, folder)
        check_workers_agree(tool, folder)
        check_delayed_frames(tool, folder)
    check_refused(tool)
    print("explore --ranks: ok")


if __name__ == "__main__":
    main()
