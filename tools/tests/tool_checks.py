#!/usr/bin/env python3
"""Checks of the tandem tool that need more than an exit code: malformed input is reported with
file:line:column and runs nothing, --json is valid JSON, and --trace writes well-formed Chrome
trace event JSON (every event has its phase, timestamp, process and thread; begins and ends pair
up per thread, in timestamp order)."""

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


MALFORMED = {
    "unknown_key.yaml": ("name: x\ndevices: {count: 1}\nsteps:\n"
                         "  - allocate: {name: a, device: 0, size: 64, colour: red}\n", 4, "unknown key 'colour'"),
    "wrong_type.yaml": ("name: x\ndevices: {count: 1}\nsteps:\n"
                        "  - allocate: {name: a, device: 0, size: lots}\n", 4, "unsigned integer"),
    "unknown_buffer.yaml": ("name: x\ndevices: {count: 1}\nsteps:\n"
                            "  - allocate: {name: a, device: 0, size: 64}\n"
                            "  - read: {buffer: b}\n", 5, "not 'b'"),
    "bad_slice.yaml": ("name: x\ndevices: {count: 1}\nsteps:\n"
                       "  - allocate: {name: a, device: 0, size: 64}\n"
                       "  - slice: {name: s, of: a, offset: 32, length: 64}\n", 5, "fit in 'a'"),
    "bad_device.yaml": ("name: x\ndevices: {count: 2}\nsteps:\n"
                        "  - allocate: {name: a, device: 2, size: 64}\n", 4, "device index below 2"),
    "syntax.yaml": ("name: x\ndevices: {count: 1\nsteps: []\n", None, ""),
}


def check_malformed(tool):
    with tempfile.TemporaryDirectory() as folder:
        for name, (text, line, needle) in MALFORMED.items():
            path = os.path.join(folder, name)
            with open(path, "w") as file:
                file.write(text)
            result = run(tool, "run", path)
            if result.returncode != 2:
                fail(f"{name}: exit {result.returncode}, expected 2\n{result.stdout}{result.stderr}")
            match = re.search(re.escape(path) + r":(\d+):(\d+): ", result.stderr)
            if not match:
                fail(f"{name}: no file:line:column in: {result.stderr}")
            if line is not None and int(match.group(1)) != line:
                fail(f"{name}: reported line {match.group(1)}, expected {line}: {result.stderr}")
            if needle not in result.stderr:
                fail(f"{name}: '{needle}' missing from: {result.stderr}")
            if "PASS" in result.stdout or "FAIL" in result.stdout:
                fail(f"{name}: something ran: {result.stdout}")
        for args in (["run", "--backend", "cuda", folder], ["run", os.path.join(folder, "missing.yaml")],
                     ["run", "--no-such-flag", folder]):
            result = run(tool, *args)
            if result.returncode != 2:
                fail(f"{args}: exit {result.returncode}, expected 2")
    print("malformed input: ok")


def check_trace(tool, scenarios):
    with tempfile.TemporaryDirectory() as folder:
        trace_path = os.path.join(folder, "trace.json")
        result = run(tool, "run", "--json", "--trace", trace_path, scenarios)
        if result.returncode != 0:
            fail(f"run --trace exited {result.returncode}: {result.stdout}{result.stderr}")
        summary = json.loads(result.stdout)
        if summary["failed"] != 0 or summary["total"] < 25:
            fail(f"unexpected summary: {summary['total']} total, {summary['failed']} failed")
        with open(trace_path) as file:
            trace = json.load(file)
    events = trace["traceEvents"]
    if not events:
        fail("the trace has no events")
    open_spans = {}
    last_ts = {}
    begins = 0
    for event in events:
        for key in ("ph", "ts", "pid", "tid", "name"):
            if key not in event:
                fail(f"event without '{key}': {event}")
        thread = (event["pid"], event["tid"])
        if event["ph"] in ("B", "E"):
            if event["ts"] < last_ts.get(thread, 0):
                fail(f"timestamps go back on {thread}: {event}")
            last_ts[thread] = event["ts"]
        if event["ph"] == "B":
            open_spans.setdefault(thread, []).append(event["name"])
            begins += 1
        elif event["ph"] == "E":
            stack = open_spans.get(thread)
            if not stack:
                fail(f"an end without its begin: {event}")
            if stack.pop() != event["name"]:
                fail(f"an end that closes another begin: {event}")
    for thread, stack in open_spans.items():
        if stack:
            fail(f"begins without their end on {thread}: {stack}")
    if begins == 0:
        fail("the trace has no operations")
    if not any(event["ph"] == "i" for event in events):
        fail("the trace shows no failure or skip")
    print(f"trace: ok ({len(events)} events, {begins} operations)")


def check_json_of_names_that_are_not_utf8(tool, scenarios):
    """--json stays valid JSON when a scenario's path and name are not UTF-8."""
    with tempfile.TemporaryDirectory() as folder:
        source = os.path.join(scenarios, "01-partial-writes.yaml")
        with open(source, "rb") as file:
            text = file.read()
        text = re.sub(rb"^name: .*$", b"name: caf\xe9 \xff", text, count=1, flags=re.M)
        path = os.path.join(os.fsencode(folder), b"odd-\xff\xfe.yaml")
        with open(path, "wb") as file:
            file.write(text)
        result = subprocess.run([tool, "run", "--json", path], capture_output=True, timeout=300)
        try:
            summary = json.loads(result.stdout.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            fail(f"--json with a name that is not UTF-8 is not JSON ({error}): {result.stdout!r}")
        if "\ufffd" not in summary["scenarios"][0]["file"]:
            fail(f"the odd bytes of the path are not replaced: {summary}")
    print("json of names that are not utf-8: ok")


def check_command_line(tool):
    """The edges a newcomer meets first: the version, help on a command, a mistyped command, and
    numbers that would wrap."""
    result = run(tool, "--version")
    if result.returncode != 0 or not re.match(r"tandem \d+\.\d+\.\d+", result.stdout):
        fail(f"--version: exit {result.returncode}: {result.stdout}{result.stderr}")
    result = run(tool, "help", "run")
    if result.returncode != 0 or "Usage: tandem run" not in result.stdout:
        fail(f"help run: exit {result.returncode}: {result.stdout}{result.stderr}")
    result = run(tool, "expore")
    if result.returncode != 2 or "did you mean 'explore'" not in result.stderr:
        fail(f"a mistyped command: exit {result.returncode}: {result.stderr}")
    for args, needle in ((["explore", "--runs", "-5"], "must not be negative"),
                         (["explore", "--seed", "-1", "--runs", "1"], "must not be negative"),
                         (["explore", "--minutes", "0"], "not in range")):
        result = run(tool, *args)
        if result.returncode != 2 or needle not in result.stderr or len(result.stderr) > 400:
            fail(f"{' '.join(args)}: exit {result.returncode}: {result.stderr}")
    print("command line: ok")


def explore(tool, folder, *args):
    """Exit code and output of an explore run, with its timing and output folder written out."""
    result = run(tool, "explore", "--out", folder, *args)
    lines = [re.sub(r" in [0-9.]+ s \([0-9]+ programs per second\)", "", line).replace(folder, "OUT")
             for line in result.stdout.splitlines()]
    return result.returncode, lines, result.stderr


def check_explore_jobs(tool):
    """Explore in worker processes reports exactly what a serial run of the same seed does: the
    same programs and faults, and a violation planted in one program found, reported and shrunk
    to the same scenario file, which replays as a failure."""
    with tempfile.TemporaryDirectory() as folder:
        serial = explore(tool, os.path.join(folder, "serial"), "--runs", "300", "--seed", "11", "--jobs", "1")
        parallel = explore(tool, os.path.join(folder, "parallel"), "--runs", "300", "--seed", "11",
                           "--jobs", "3")
        if serial[0] != 0 or serial[:2] != parallel[:2]:
            fail(f"explore --jobs 3 differs from --jobs 1:\n{serial}\n{parallel}")
        planted = ("--runs", "200", "--seed", "40", "--plant-violation", "117")
        outputs = {}
        for jobs in ("1", "3"):
            out = os.path.join(folder, "planted-" + jobs)
            code, lines, errors = explore(tool, out, *planted, "--jobs", jobs)
            if code != 1 or not any(line.startswith("violation: program seed 117 ") for line in lines):
                fail(f"--jobs {jobs} did not report the planted violation (exit {code}): {lines} {errors}")
            with open(os.path.join(out, "explore-117.yaml")) as file:
                outputs[jobs] = (lines, file.read().replace(out, "OUT"))
            replayed = run(tool, "replay", os.path.join(out, "explore-117.yaml"))
            if replayed.returncode != 1:
                fail(f"the shrunk program of --jobs {jobs} does not fail on replay: {replayed.stdout}")
        if outputs["1"] != outputs["3"]:
            fail(f"the planted violation is reported differently with --jobs 3:\n{outputs}")
        soak = run(tool, "explore", "--minutes", "0.02", "--jobs", "2", "--out", folder)
        if soak.returncode != 0 or "programs run:" not in soak.stdout:
            fail(f"a soak with --jobs 2: exit {soak.returncode}: {soak.stdout}{soak.stderr}")
    for value in ("0", "-1", "257", "two"):
        result = run(tool, "explore", "--runs", "1", "--jobs", value)
        if (result.returncode != 2 or not result.stderr.startswith("tandem: ") or "--jobs" not in result.stderr):
            fail(f"--jobs {value}: exit {result.returncode}: {result.stderr}")
    print("explore jobs: ok")


def main():
    tool, scenarios = sys.argv[1], sys.argv[2]
    check_malformed(tool)
    check_trace(tool, scenarios)
    check_command_line(tool)
    check_json_of_names_that_are_not_utf8(tool, scenarios)
    check_explore_jobs(tool)


if __name__ == "__main__":
    main()
