#!/usr/bin/env bash
# A scenario file cannot make the tool write outside the paths it was given: a scenario whose
# name and buffer names look like paths runs with --trace into a fresh folder, from a fresh
# working folder; afterwards the trace file is the only file that exists in either.
#   writes_only_given_paths.sh TANDEM
set -euo pipefail
tandem=$(realpath "$1")
work=$(mktemp -d)
given=$(mktemp -d)
trap 'rm -rf "$work" "$given"' EXIT
cat >"$work/hostile.yaml" <<'YAML'
name: ../../../tmp/escaped-by-name
devices: {count: 2}
steps:
  - allocate: {name: buffer, device: 0, size: 64}
  - write: {buffer: buffer, fill: 7}
  - read: {buffer: buffer, expect: {fill: 7}}
YAML
cat >"$work/paths.yaml" <<'YAML'
name: paths as buffer names
devices: {count: 2}
steps:
  - allocate: {name: ../../escaped-buffer, device: 0, size: 64}
YAML
# Where a name used as a path could land: the temporary folder and the working folder's parents.
escaped() { find /tmp "$(dirname "$work")" -maxdepth 4 -name '*escaped*' 2>/dev/null | wc -l; }
before=$(escaped)
# A buffer name that looks like a path is refused before anything runs (exit 2).
status=0
(cd "$work" && "$tandem" run --trace "$given/refused.json" paths.yaml >/dev/null 2>&1) || status=$?
[ "$status" -eq 2 ] || { echo "a path as a buffer name was not refused (exit $status)"; exit 1; }
[ -z "$(ls -A "$given")" ] || { echo "a refused scenario wrote files"; ls -A "$given"; exit 1; }
rm "$work/paths.yaml"
(cd "$work" && "$tandem" run --trace "$given/trace.json" hostile.yaml >/dev/null)
[ "$(ls -A "$given")" = "trace.json" ] || { echo "unexpected files in the given folder"; ls -A "$given"; exit 1; }
[ "$(ls -A "$work")" = "hostile.yaml" ] || { echo "files written in the working folder"; ls -A "$work"; exit 1; }
after=$(escaped)
[ "$before" = "$after" ] || { echo "a file named after the scenario appeared elsewhere"; exit 1; }
echo "only the given trace path was written"
