# Shared set-up for tools/test and tools/scenarios: install the Debian packages the build needs
# (only those missing), then configure and build. Sourced, not run.

TANDEM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TANDEM_PACKAGES=(g++ cmake ninja-build ccache libgtest-dev libgmock-dev librapidcheck-dev
                 libboost-dev libboost-context-dev libdlpack-dev libcli11-dev libyaml-cpp-dev
                 nlohmann-json3-dev libbenchmark-dev clang doxygen libopenmpi-dev openmpi-bin
                 iproute2)

# ccache shares its cache between clones of the repository: paths are hashed relative to the
# root, and the build folder's path is left out of the hash.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$TANDEM_ROOT}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"

tandem_log() { printf '== %s\n' "$*" >&2; }

# Copies into DIR the shared libraries of BINARY... that a GPU machine may lack (yaml-cpp, Google
# Benchmark), for binaries built here and run there with DIR on their library path.
tandem_ship_libraries() {
  local dir=$1 binary library
  shift
  for binary in "$@"; do
    [ -x "$binary" ] || continue
    ldd "$binary" | awk '/yaml-cpp|benchmark/ {print $3}' | while read -r library; do
      # Once copied, a binary may resolve the library to the copy itself.
      [ "$library" -ef "$dir/$(basename "$library")" ] || cp -L "$library" "$dir/"
    done
  done
}

tandem_install_packages() {
  local missing=()
  for package in "${TANDEM_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$package")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  tandem_log "installing ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

# Configures and builds one preset. CI=true turns warnings into errors (the ci preset).
tandem_build() {
  local preset=${1:-}
  if [ -z "$preset" ]; then
    if [ "${CI:-}" = "true" ]; then preset=ci; else preset=default; fi
  fi
  TANDEM_PRESET=$preset
  TANDEM_BUILD_DIR="$TANDEM_ROOT/build/$preset"
  tandem_log "configuring ($preset)"
  cmake --preset "$preset" -S "$TANDEM_ROOT" >/dev/null
  tandem_log "building ($preset)"
  cmake --build --preset "$preset"
}
