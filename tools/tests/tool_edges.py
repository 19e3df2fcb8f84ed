#!/usr/bin/env python3
"""The tool's edges a user meets after the first steps, each refused or answered in words of the
tool's own: several files or a folder where one file is read, an option that is mistyped or that
no command has, an output path that cannot be written (refused before anything runs, nothing
created), the programs `explore --keep` writes (they replay), the time left on a progress line,
and a benchmark run once (its one measurement is its median).
    tool_edges.py TANDEM SCENARIOS"""

import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tool_checks import fail, run, run_with_terminal_stderr  # noqa: E402


def refused_exactly(tool, args, lines):
    """Runs a command that must be refused: exit 2, nothing on stdout, and exactly `lines` on
    stderr."""
    result = run(tool, *args)
    if result.returncode != 2 or result.stdout or result.stderr.splitlines() != lines:
        fail(f"{' '.join(args)}: exit {result.returncode}, stdout {result.stdout!r}, "
             f"stderr {result.stderr!r}, expected {lines!r}")


def check_one_file_commands(tool, scenarios):
    """replay and inspect read one scenario file: two files, or a folder, are refused naming what
    was given and the command that takes several."""
    first = os.path.join(scenarios, "01-partial-writes.yaml")
    second = os.path.join(scenarios, "16-device-loss-seen-by-peers.yaml")
    for command in ("replay", "inspect"):
        refused_exactly(tool, [command, first, second],
                        [f"tandem: {command} takes one scenario file, not 2; 'tandem run' runs "
                         "several (files or folders)"])
        refused_exactly(tool, [command, scenarios],
                        [f"tandem: {command} {scenarios}: is a folder; {command} takes one "
                         f"scenario file ('tandem run {scenarios}' runs every scenario of the "
                         "folder)"])
    replayed = run(tool, "replay", first)
    if replayed.returncode != 0 or "PASS" not in replayed.stdout:
        fail(f"replay of one file: exit {replayed.returncode}: {replayed.stdout}{replayed.stderr}")
    print("one-file commands: ok")


def check_unknown_arguments(tool, scenarios):
    """A mistyped option is one line of the tool's own with the option meant; an option far from
    any, and an argument a command does not take, are named alone. The parser's own words
    ("not expected") never show."""
    help_line = "Run 'tandem run --help' for more information."
    refused_exactly(tool, ["run", "--backnd", "sim", scenarios],
                    ["tandem: '--backnd' is not an option of 'tandem run'; did you mean "
                     "'--backend'?", help_line])
    refused_exactly(tool, ["run", "--qqqqqqqqqq", scenarios],
                    ["tandem: '--qqqqqqqqqq' is not an option of 'tandem run'", help_line])
    refused_exactly(tool, ["doctor", "extra"],
                    ["tandem: 'tandem doctor' does not take 'extra'",
                     "Run 'tandem doctor --help' for more information."])
    print("unknown arguments: ok")


def check_unwritable_outputs(tool, scenarios):
    """--out and --trace that cannot be written are refused before anything runs, naming the
    path, and nothing is created."""
    with tempfile.TemporaryDirectory() as folder:
        missing = os.path.join(folder, "missing")
        a_file = os.path.join(folder, "a-file")
        open(a_file, "w").close()
        if not os.path.exists("/nonexistent"):
            refused_exactly(tool, ["explore", "--runs", "3", "--out", "/nonexistent/dir"],
                            ["tandem: --out /nonexistent/dir: the folder /nonexistent does not "
                             "exist"])
        refused_exactly(tool, ["explore", "--runs", "3", "--out", os.path.join(missing, "dir")],
                        [f"tandem: --out {missing}/dir: the folder {missing} does not exist"])
        refused_exactly(tool, ["explore", "--runs", "3", "--keep", "1", "--out", a_file],
                        [f"tandem: --out {a_file}: is not a folder"])
        for command in ("run", "replay"):
            target = os.path.join(scenarios, "01-partial-writes.yaml")
            refused_exactly(tool, [command, "--trace", os.path.join(missing, "trace.json"), target],
                            [f"tandem: --trace {missing}/trace.json: the folder {missing} does "
                             "not exist"])
            refused_exactly(tool, [command, "--trace", folder, target],
                            [f"tandem: --trace {folder}: is a folder; give a file name"])
        if sorted(os.listdir(folder)) != ["a-file"]:
            fail(f"a refused command created files: {os.listdir(folder)}")
        # A new folder under one that exists is fine: explore makes it when it writes.
        made = os.path.join(folder, "made")
        result = run(tool, "explore", "--runs", "2", "--keep", "1", "--out", made)
        if result.returncode != 0 or os.listdir(made) != ["program-1.yaml"]:
            fail(f"explore --out of a new folder: exit {result.returncode}: {result.stderr}")
    print("unwritable outputs: ok")


def check_kept_programs(tool):
    """explore --keep N writes the first N programs, the same with workers as without, as
    scenarios that replay and pass; the summary and the JSON document list them."""
    with tempfile.TemporaryDirectory() as folder:
        texts = {}
        for jobs in ("1", "2"):
            out = os.path.join(folder, "jobs-" + jobs)
            result = run(tool, "explore", "--runs", "6", "--seed", "7", "--keep", "3", "--jobs",
                         jobs, "--out", out)
            files = sorted(os.listdir(out))
            if result.returncode != 0 or files != ["program-7.yaml", "program-8.yaml",
                                                   "program-9.yaml"]:
                fail(f"--keep 3 --jobs {jobs}: exit {result.returncode}, files {files}: "
                     f"{result.stdout}{result.stderr}")
            summary = (f"kept 3 programs: {out}/program-7.yaml ... {out}/program-9.yaml")
            if summary not in result.stdout.splitlines():
                fail(f"--keep 3: no '{summary}' in: {result.stdout}")
            texts[jobs] = []
            for name in files:
                with open(os.path.join(out, name)) as file:
                    texts[jobs].append(file.read().replace(out, "OUT"))
        if texts["1"] != texts["2"]:
            fail("--keep writes other programs with --jobs 2 than with --jobs 1")
        for name in ("program-7.yaml", "program-9.yaml"):
            replay = run(tool, "replay", "--json", os.path.join(folder, "jobs-1", name))
            document = json.loads(replay.stdout) if replay.returncode == 0 else {}
            if document.get("total") != 1 or document.get("passed") != 1:
                fail(f"replay of kept {name}: exit {replay.returncode}: {replay.stdout}{replay.stderr}")
        out = os.path.join(folder, "json")
        result = run(tool, "explore", "--runs", "2", "--seed", "7", "--keep", "5", "--json",
                     "--out", out)
        kept = json.loads(result.stdout).get("kept") if result.returncode == 0 else None
        if kept != [os.path.join(out, "program-7.yaml"), os.path.join(out, "program-8.yaml")]:
            fail(f"explore --json --keep 5 of 2 programs: kept {kept}: {result.stderr}")
        refused_exactly(tool, ["explore", "--keep", "10001", "--out", out],
                        ["tandem: --keep: must be from 0 to 10000, not 10001",
                         "Run 'tandem explore --help' for more information."])
    print("kept programs: ok")


def check_time_left(tool):
    """A soak's progress line says how long is left from its first drawing; a run of a known
    count says it once there is a rate (progress_test.cpp checks the arithmetic)."""
    code, _, stderr = run_with_terminal_stderr(tool, "explore", "--minutes", "0.017", "--seed", "3")
    if code != 0 or not re.search(r"tandem explore: 0 programs, 0 per second, 0 violations, "
                                  r"about \d+ s left", stderr):
        fail(f"a soak's progress line gives no time left: exit {code}: {stderr!r}")
    print("time left: ok")


def check_bench_run_once(tool):
    """bench --repetitions 1 reports what it measured: Google Benchmark gives no median of one
    run, so the one measurement stands for it."""
    if not os.path.exists(os.path.join(os.path.dirname(tool), "bench", "tandem_bench")):
        print("bench run once: skipped (the benchmarks are not built here)")
        return
    result = run(tool, "bench", "--repetitions", "1", "--filter", "sim_empty_launch", "--json")
    if result.returncode != 0:
        fail(f"bench --repetitions 1: exit {result.returncode}: {result.stderr[-2000:]}")
    suite = json.loads(result.stdout)["suites"][0]
    runs = [median["run"] for median in suite.get("medians", [])]
    if (suite["name"] != "tandem_bench" or not suite["ran"] or not runs
            or any("sim_empty_launch" not in name for name in runs)
            or any(median["seconds"] <= 0 for median in suite["medians"])):
        fail(f"bench --repetitions 1: the suite reports {suite}")
    lines = run(tool, "bench", "--repetitions", "1", "--filter", "sim_empty_launch")
    if lines.returncode != 0 or "tandem_bench medians (real time)" not in lines.stdout \
            or "tandem: tandem_bench " in lines.stderr:
        fail(f"bench --repetitions 1 as lines: exit {lines.returncode}: {lines.stdout}{lines.stderr[-2000:]}")
    # A suite the filter matches nothing of says so, naming the filter, and does not fail the run.
    cuda = json.loads(result.stdout)["suites"][1]
    if cuda["built"] and (cuda["ran"] or cuda["problem"] !=
                          "has no benchmark that matches --filter 'sim_empty_launch'"):
        fail(f"bench: the CUDA suite, which has no sim_empty_launch, reports {cuda}")
    print(f"bench run once: ok ({', '.join(runs)})")


def main():
    tool, scenarios = sys.argv[1], sys.argv[2]
    check_one_file_commands(tool, scenarios)
    check_unknown_arguments(tool, scenarios)
    check_unwritable_outputs(tool, scenarios)
    check_kept_programs(tool)
    check_time_left(tool)
    check_bench_run_once(tool)


if __name__ == "__main__":
    main()
