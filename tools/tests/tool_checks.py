#!/usr/bin/env python3
"""Checks of the tandem tool that need more than an exit code: malformed input is reported with
file:line:column and runs nothing; --trace writes well-formed Chrome trace event JSON (every event
has its phase, timestamp, process and thread; begins and ends pair up per thread, in timestamp
order); every --json document parses and holds the fields and values expected, names that are
not UTF-8 included; progress reaches a terminal only; the command line's edges."""

import json
import os
import pty
import re
import subprocess
import sys
import tempfile
import threading


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
    "bad_ranks.yaml": ("name: x\ndevices: {count: 3, ranks: 2}\nsteps:\n"
                       "  - allocate: {name: a, device: 0, size: 64}\n", 2, "divides the 3 devices"),
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
            if any(not line.startswith("tandem: ") for line in result.stderr.splitlines()):
                fail(f"{name}: a line without the tandem: prefix: {result.stderr}")
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
        if summary["schema"] != 1 or summary["command"] != "run" or summary["backend"] != "sim":
            fail(f"unexpected header: {summary['schema']}, {summary['command']}, {summary['backend']}")
        if summary["failed"] != 0 or summary["total"] < 25 or \
                summary["passed"] + summary["skipped"] != summary["total"]:
            fail(f"unexpected summary: {summary['total']} total, {summary['failed']} failed")
        with open(trace_path) as file:
            trace = json.load(file)
    if trace["schema"] != 1 or trace["displayTimeUnit"] != "ms":
        fail(f"the trace's header: schema {trace.get('schema')}, unit {trace.get('displayTimeUnit')}")
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
    """--json and --trace stay valid JSON when a scenario's path and name are not UTF-8: each byte
    that is not UTF-8 becomes U+FFFD, and the rest of the text stays."""
    with tempfile.TemporaryDirectory() as folder:
        source = os.path.join(scenarios, "01-partial-writes.yaml")
        with open(source, "rb") as file:
            text = file.read()
        text = re.sub(rb"^name: .*$", b"name: caf\xe9 \xff", text, count=1, flags=re.M)
        path = os.path.join(os.fsencode(folder), b"odd-\xff\xfe.yaml")
        with open(path, "wb") as file:
            file.write(text)
        trace_path = os.path.join(folder, "trace.json")
        result = subprocess.run([tool, "run", "--json", "--trace", trace_path, path],
                                capture_output=True, timeout=300)
        try:
            summary = json.loads(result.stdout.decode("utf-8"))
            with open(trace_path, encoding="utf-8") as file:
                trace = json.load(file)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            fail(f"--json with a name that is not UTF-8 is not JSON ({error}): {result.stdout!r}")
        scenario = summary["scenarios"][0]
        if summary["schema"] != 1 or not scenario["file"].endswith("odd-\ufffd\ufffd.yaml"):
            fail(f"the odd bytes of the path are not replaced: {summary}")
        if scenario["name"] != "caf\ufffd \ufffd":
            fail(f"the odd bytes of the name are not replaced: {scenario['name']!r}")
        names = [event["args"]["name"] for event in trace["traceEvents"] if event["ph"] == "M"]
        if "caf\ufffd \ufffd - device 0" not in names:
            fail(f"the trace does not name the scenario with its bytes replaced: {names}")
    print("json of names that are not utf-8: ok")


def check_folder_scan(tool, scenarios):
    """A folder holds scenarios named *.yaml and *.yml alike, run sorted by name; other files stay
    out."""
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(scenarios, "01-partial-writes.yaml")) as file:
            text = file.read()
        for name in ("b.yml", "a.yaml", "c.txt", "d.yaml.bak"):
            with open(os.path.join(folder, name), "w") as file:
                file.write(text)
        result = run(tool, "run", "--json", folder)
        if result.returncode != 0:
            fail(f"run of a folder with .yml: exit {result.returncode}: {result.stderr}")
        files = [os.path.basename(scenario["file"]) for scenario in json.loads(result.stdout)["scenarios"]]
        if files != ["a.yaml", "b.yml"]:
            fail(f"a folder's scenarios are {files}, expected a.yaml and b.yml")
    print("folder scan: ok")


def run_with_terminal_stderr(tool, *args):
    """Runs the tool with stderr on a pseudo-terminal and stdout on a pipe; returns the exit code,
    stdout and what the terminal received."""
    controller, terminal = pty.openpty()
    received = []

    def drain():
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # The terminal side closed: the tool has exited.
                return
            if not chunk:
                return
            received.append(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    result = subprocess.run([tool, *args], stdout=subprocess.PIPE, stderr=terminal, timeout=300)
    os.close(terminal)
    reader.join()
    os.close(controller)
    return result.returncode, result.stdout.decode(), b"".join(received).decode()


def check_progress(tool, scenarios):
    """Progress goes to stderr while stderr is a terminal, and nowhere otherwise; stdout holds only
    the results either way."""
    cases = ((["run", scenarios], "tandem run: 0/"),
             (["explore", "--runs", "50", "--seed", "3"], "tandem explore: 0/50 programs, "),
             (["explore", "--minutes", "0.017", "--seed", "3"], "tandem explore: 0 programs, "))
    for args, opening in cases:
        code, stdout, stderr = run_with_terminal_stderr(tool, *args)
        if code != 0 or opening not in stderr or "per second, 0 " not in stderr:
            fail(f"{' '.join(args)} on a terminal: exit {code}, no progress line: {stderr!r}")
        if not stderr.endswith("\r\033[K"):
            fail(f"{' '.join(args)}: the progress line is not erased at the end: {stderr[-80:]!r}")
        if "\r" in stdout or "\033" in stdout:
            fail(f"{' '.join(args)}: progress on stdout: {stdout!r}")
        piped = run(tool, *args)
        if piped.returncode != 0 or piped.stderr != "":
            fail(f"{' '.join(args)} without a terminal: exit {piped.returncode}, stderr {piped.stderr!r}")
    print("progress: ok")


def json_of(tool, *args, code=0):
    """The JSON document a command prints, after checking its exit code and schema version."""
    result = run(tool, *args)
    if result.returncode != code:
        fail(f"{' '.join(args)}: exit {result.returncode}, expected {code}: {result.stderr}")
    try:
        document = json.loads(result.stdout)
    except json.JSONDecodeError as error:
        fail(f"{' '.join(args)}: not JSON ({error}): {result.stdout!r}")
    if document.get("schema") != 1 or document.get("command") != args[0]:
        fail(f"{' '.join(args)}: schema {document.get('schema')}, command {document.get('command')}")
    return document


def expect(what, document, **fields):
    for key, value in fields.items():
        if document.get(key) != value:
            fail(f"{what}: {key} is {document.get(key)!r}, expected {value!r}")


def check_json_documents(tool, scenarios):
    """Every command that reports prints one JSON document under --json, with the fields its
    --help lists."""
    loss = os.path.join(scenarios, "16-device-loss-seen-by-peers.yaml")
    replay = json_of(tool, "replay", "--json", "--seed", "5", loss)
    expect("replay", replay, backend="sim", total=1, passed=1, failed=0, skipped=0)
    expect("replay's scenario", replay["scenarios"][0], seed=5, passed=True, failure=None)
    if len(replay["scenarios"][0]["outcomes"]) != replay["scenarios"][0]["steps"]:
        fail(f"replay: one outcome per step expected: {replay['scenarios'][0]}")

    inspect = json_of(tool, "inspect", "--json", loss)
    expect("inspect", inspect, file=loss, passed=True, seed=1, failure=None)
    if len(inspect["outcomes"]) != inspect["steps"] or len(inspect["devices"]) != 2:
        fail(f"inspect: {len(inspect['outcomes'])} outcomes, {len(inspect['devices'])} devices")
    expect("inspect's lost device", inspect["devices"][0], lost=True)
    expect("inspect's other device", inspect["devices"][1], lost=False)

    doctor = json_of(tool, "doctor", "--json", "--devices", "3")
    expect("doctor", doctor, ok=True)
    expect("doctor's simulator", doctor["simulator"], started=True, problem=None)
    expect("doctor's /dev/shm", doctor["shm"], available=True)
    if len(doctor["simulator"]["devices"]) != 3 or doctor["simulator"]["peer_access"] != [
            [True, False, False], [False, True, False], [False, False, True]]:
        fail(f"doctor: three devices, none granted to another, expected: {doctor['simulator']}")
    cuda = doctor["cuda"]
    if cuda["usable"] != (cuda["problem"] is None) or len(cuda["gpus"]) != len(cuda["peer_access"]):
        fail(f"doctor's cuda part does not hold together: {cuda}")
    nccl = doctor["nccl"]
    if nccl["usable"] != (nccl["problem"] is None) or nccl["usable"] != (nccl["version"] is not None):
        fail(f"doctor's nccl part does not hold together: {nccl}")

    explore = json_of(tool, "explore", "--json", "--runs", "30", "--seed", "7")
    expect("explore", explore, seed=7, devices=2, steps=100, runs=30, minutes=None, programs=30,
           violations=0, violating_programs=[])
    if explore["faults"] <= 0 or explore["peak_resident_kib"]["after_programs"] != 30:
        fail(f"explore: {explore}")
    soak = json_of(tool, "explore", "--json", "--minutes", "0.017", "--steps", "5")
    expect("soak", soak, runs=None, minutes=0.017, violations=0, steps=5)
    if soak["programs"] <= 0:
        fail(f"soak: no programs: {soak}")
    selfcheck = json_of(tool, "selfcheck", "--json")
    expect("selfcheck", selfcheck, failed=0, total=len(selfcheck["checks"]))
    if len(selfcheck["checks"]) < 5 or not all(check["passed"] for check in selfcheck["checks"]):
        fail(f"selfcheck: {selfcheck}")
    # No benchmark matches: each suite that is built runs and measures nothing.
    bench = json_of(tool, "bench", "--json", "--repetitions", "1", "--filter", "^matches_nothing$",
                    code=1)
    expect("bench", bench, repetitions=1, filter="^matches_nothing$")
    if [suite["name"] for suite in bench["suites"]] != ["tandem_bench", "tandem_cuda_bench"] or \
            any(suite["ran"] for suite in bench["suites"]):
        fail(f"bench: {bench}")
    check_json_of_a_failure(tool)
    print("json documents: ok")


def check_json_of_a_failure(tool):
    """A scenario whose read finds other bytes than it expects: exit 1, and the documents say
    which step failed."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "wrong.yaml")
        with open(path, "w") as file:
            file.write("name: wrong expectation\ndevices: {count: 1}\nsteps:\n"
                       "  - allocate: {name: a, device: 0, size: 64}\n"
                       "  - write: {buffer: a, fill: 7}\n"
                       "  - read: {buffer: a, expect: {fill: 8}}\n")
        summary = json_of(tool, "run", "--json", path, code=1)
        expect("run of a failing scenario", summary, total=1, passed=0, failed=1, skipped=0)
        expect("its scenario", summary["scenarios"][0], passed=False, skipped=False)
        if f"{path}:6:" not in (summary["scenarios"][0]["failure"] or ""):
            fail(f"the failure does not name the read's line: {summary}")
        inspect = json_of(tool, "inspect", "--json", path, code=1)
        expect("inspect of a failing scenario", inspect, passed=False)
        if f"{path}:6:" not in (inspect["failure"] or ""):
            fail(f"inspect's failure does not name the read's line: {inspect}")


def check_clean_json(tool):
    """clean --dry-run --json lists a segment of a process that is gone as one to remove, and one
    of a live process as one to keep, and removes neither. (A real clean is not run here: it
    would remove segments that tests running beside this one are about to look at.)"""
    child = subprocess.Popen(["true"])
    child.wait()
    names = {f"tandem-{child.pid}-00000000000c1ea0-d0": ("remove", False),
             f"tandem-{os.getpid()}-00000000000c1ea1-d0": ("keep", True)}
    try:
        for name in names:
            open(os.path.join("/dev/shm", name), "w").close()
        document = json_of(tool, "clean", "--dry-run", "--json")
        expect("clean --dry-run", document, dry_run=True, removed=0)
        listed = {segment["name"]: segment for segment in document["segments"]}
        for name, (action, alive) in names.items():
            if name not in listed:
                fail(f"clean --dry-run --json does not list {name}: {document}")
            expect(f"clean's {name}", listed[name], action=action, owner_alive=alive)
            if not os.path.exists(os.path.join("/dev/shm", name)):
                fail(f"clean --dry-run removed {name}")
    finally:
        for name in names:
            if os.path.exists(os.path.join("/dev/shm", name)):
                os.remove(os.path.join("/dev/shm", name))
    print("clean json: ok")


# Every number option of every command, each with a value it must refuse and the words the
# message must hold after "tandem: --OPTION: ".
REFUSED_NUMBERS = (
    (["run", "--seed", "-1"], "--seed: must not be negative"),
    (["run", "--seed", "18446744073709551616"], "--seed: must be from 0 to 2^64 - 1"),
    (["replay", "--seed", "1.5"], "--seed: '1.5' is not a whole number"),
    (["inspect", "--seed", "-3"], "--seed: must not be negative"),
    (["explore", "--runs", "-5"], "--runs: must not be negative"),
    (["explore", "--runs", "2x"], "--runs: '2x' is not a whole number"),
    (["explore", "--seed", "-1", "--runs", "1"], "--seed: must not be negative"),
    (["explore", "--seed", "99999999999999999999"], "--seed: must be from 0 to 2^64 - 1"),
    (["explore", "--devices", "0"], "--devices: must be from 1 to 16, not 0"),
    (["explore", "--devices", "17"], "--devices: must be from 1 to 16, not 17"),
    (["explore", "--steps", "0"], "--steps: must be from 1 to 10000, not 0"),
    (["explore", "--steps", "-2"], "--steps: must not be negative"),
    (["explore", "--minutes", "0"], "--minutes: must be from 1/60 (a second) to 1000000 minutes"),
    (["explore", "--minutes", "nan"], "--minutes: 'nan' is not a number"),
    (["explore", "--minutes", "1e7"], "--minutes: must be from 1/60"),
    (["explore", "--seed", "18446744073709551615", "--runs", "2"],
     "--seed 18446744073709551615 with --runs 2: the last program's seed would pass 2^64 - 1"),
    (["doctor", "--devices", "0"], "--devices: must be from 1 to 64, not 0"),
    (["doctor", "--devices", "65"], "--devices: must be from 1 to 64, not 65"),
    (["bench", "--repetitions", "0"], "--repetitions: must be from 1 to 100, not 0"),
    (["bench", "--repetitions", "-1"], "--repetitions: must not be negative"),
)

# Mistyped options, and the option each should suggest.
MISTYPED_OPTIONS = (
    (["run", "--sed", "3", "scenarios"], "'--sed' is not an option of 'tandem run'; did you mean '--seed'?"),
    (["explore", "--jsn"], "did you mean '--json'?"),
    (["clean", "--dryrun"], "did you mean '--dry-run'?"),
    (["inspect", "--sede", "1", "x.yaml"], "did you mean '--seed'?"),
    (["--verison"], "'--verison' is not an option of 'tandem'; did you mean '--version'?"),
)


def refused(tool, args, needle):
    """Runs a command that must be refused as a usage error: exit 2, nothing on stdout, and every
    line on stderr the tool's own ("tandem: ..." or where to read more)."""
    result = run(tool, *args)
    lines = result.stderr.splitlines()
    if result.returncode != 2 or needle not in result.stderr or result.stdout:
        fail(f"{' '.join(args)}: exit {result.returncode}, stdout {result.stdout!r}, stderr {result.stderr!r}")
    if not lines or any(not (line.startswith("tandem: ") or line.startswith("Run 'tandem"))
                        for line in lines):
        fail(f"{' '.join(args)}: a line without the tandem: prefix: {result.stderr!r}")


def check_help_footers(tool):
    """Each command's help ends with its JSON fields and its exit codes; the tool's with the exit
    codes every command shares."""
    for command in ("run", "replay", "explore", "inspect", "selfcheck", "doctor", "clean", "bench"):
        result = run(tool, "help", command)
        text = result.stdout
        if result.returncode != 0 or "Exit codes:\n  0  " not in text or "\n  2  usage" not in text:
            fail(f"help {command}: no exit codes: {text}")
        if f'JSON (--json):\n  {{schema, command: "{command}"' not in text:
            fail(f"help {command}: no JSON fields: {text}")
    text = run(tool, "--help").stdout
    if "Exit codes:\n  0  " not in text or "\n  1  " not in text or "\n  2  usage" not in text:
        fail(f"--help: no exit codes: {text}")
    print("help footers: ok")


def check_command_line(tool):
    """The edges a newcomer meets first: the version, help on a command, a mistyped command or
    option, and numbers that would wrap or are out of range, refused before anything runs."""
    result = run(tool, "--version")
    if result.returncode != 0 or not re.match(r"tandem \d+\.\d+\.\d+", result.stdout):
        fail(f"--version: exit {result.returncode}: {result.stdout}{result.stderr}")
    result = run(tool, "help", "run")
    if result.returncode != 0 or "Usage: tandem run" not in result.stdout:
        fail(f"help run: exit {result.returncode}: {result.stdout}{result.stderr}")
    refused(tool, ["expore"], "tandem: 'expore' is not a command; did you mean 'explore'?")
    refused(tool, ["help", "expore"], "tandem: 'expore' is not a command; did you mean 'explore'?")
    refused(tool, [], "tandem: A subcommand is required")
    refused(tool, ["run"], "tandem: paths is required")
    for args, needle in REFUSED_NUMBERS:
        refused(tool, args, "tandem: " + needle)
    for args, needle in MISTYPED_OPTIONS:
        refused(tool, args, needle)
    print(f"command line: ok ({len(REFUSED_NUMBERS)} refused numbers, {len(MISTYPED_OPTIONS)} mistyped options)")


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
    check_folder_scan(tool, scenarios)
    check_progress(tool, scenarios)
    check_json_documents(tool, scenarios)
    check_help_footers(tool)
    check_clean_json(tool)
    check_json_of_names_that_are_not_utf8(tool, scenarios)
    check_explore_jobs(tool)


if __name__ == "__main__":
    main()
