#!/usr/bin/env python3
"""`tandem doctor`'s NCCL line and JSON part, for each thing TANDEM_NCCL_LIBRARY can name: a file
that is not there (a machine without NCCL), a library that is not NCCL, and the two stand-ins for
NCCL built with the tests (2.28.5 with the newer entry points, 2.8.4 without). The oracle: doctor
exits as it did before NCCL was reported (0 here, whatever NCCL is), prints one NCCL line that
says what was found, and its JSON says the same.

Usage: doctor_nccl.py TANDEM FAKE_NCCL_2_28 FAKE_NCCL_2_8"""

import json
import os
import subprocess
import sys


def doctor(tool, library, *args):
    environment = dict(os.environ, TANDEM_NCCL_LIBRARY=library)
    return subprocess.run([tool, "doctor", *args], capture_output=True, text=True, timeout=120,
                          env=environment)


def fail(message):
    print("FAILED: " + message)
    sys.exit(1)


def check(tool, name, line_start, line_end="", **fields):
    """Runs doctor with `name`, as lines then as JSON; the NCCL line must start with
    `line_start` and end with `line_end`, and the JSON's nccl part must hold `fields`."""
    result = doctor(tool, name)
    if result.returncode != 0:
        fail(f"doctor with {name}: exit {result.returncode}\n{result.stdout}{result.stderr}")
    lines = [line for line in result.stdout.splitlines() if line.startswith("NCCL: ")]
    if len(lines) != 1 or not lines[0].startswith(line_start) or not lines[0].endswith(line_end):
        fail(f"doctor with {name}: expected one line '{line_start}...{line_end}': {lines}")
    result = doctor(tool, name, "--json")
    document = json.loads(result.stdout)
    if result.returncode != 0 or document["ok"] is not True:
        fail(f"doctor --json with {name}: exit {result.returncode}, ok {document['ok']}")
    nccl = document["nccl"]
    for key, value in fields.items():
        if nccl[key] != value:
            fail(f"doctor --json with {name}: nccl.{key} is {nccl[key]!r}, not {value!r}")
    print(f"{name}: {lines[0]}")
    return nccl


def main():
    tool, fake_2_28, fake_2_8 = sys.argv[1], sys.argv[2], sys.argv[3]
    absent = "/nonexistent/libnccl.so.2"
    needed = "; collectives on CUDA need it"
    nccl = check(tool, absent, f"NCCL: not found ({absent}: cannot open shared object file",
                 needed, found=False, usable=False, library=absent, path=None, version=None,
                 missing=[])
    if not nccl["problem"].startswith(absent):
        fail(f"not found: the problem does not name the path: {nccl}")
    nccl = check(tool, "libm.so.6", "NCCL: unusable (libm.so.6 lacks ncclGetVersion: not NCCL",
                 needed, found=True, usable=False, version=None)
    if nccl["missing"][0] != "ncclGetVersion":
        fail(f"libm.so.6: the first missing entry point is not ncclGetVersion: {nccl}")
    newer = {"ncclCommInitRankConfig": True, "ncclCommRevoke": True, "ncclCommShrink": True}
    check(tool, fake_2_28,
          f"NCCL: 2.28.5 at {fake_2_28} (ncclCommShrink: yes, ncclCommRevoke: yes)",
          found=True, usable=True, path=fake_2_28, version="2.28.5", version_code=22805,
          problem=None, missing=[], optional=newer)
    check(tool, fake_2_8, f"NCCL: 2.8.4 at {fake_2_8} (ncclCommShrink: no, ncclCommRevoke: no)",
          version="2.8.4", version_code=2804, optional=dict.fromkeys(newer, False))
    # An empty variable counts as unset: the default name is what is tried.
    nccl = json.loads(doctor(tool, "", "--json").stdout)["nccl"]
    if nccl["library"] != "libnccl.so.2":
        fail(f"an empty TANDEM_NCCL_LIBRARY: library {nccl['library']!r}, not libnccl.so.2")
    print("doctor's NCCL part: ok")


if __name__ == "__main__":
    main()
