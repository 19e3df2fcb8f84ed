# The install check of tools/test: installs the package, then builds the examples it carries
# (share/doc/tandem/example) as another project would, and runs their tests. Sourced, not run.
#   tandem_check_installed_package BUILD_DIR

# Configures, builds and tests the installed examples in $2, with the extra configure arguments
# that follow. Prints the configure log's lines of tandem's own.
tandem_build_installed_example() {
  local prefix=$1 build=$2
  shift 2
  rm -rf "$build"
  cmake -S "$prefix/share/doc/tandem/example" -B "$build" -G Ninja \
    -DCMAKE_PREFIX_PATH="$prefix" "$@" >"$build.log" 2>&1 || { cat "$build.log" >&2; return 1; }
  grep '^-- tandem: ' "$build.log" >&2 || true
  cmake --build "$build" >/dev/null
  # The examples' own tests, as the project's user runs them (ctest ran them in-tree).
  ctest --test-dir "$build" --output-on-failure
}

tandem_check_installed_package() {
  local build_dir
  build_dir=$(cd "$1" && pwd)
  local prefix="$build_dir/install"
  rm -rf "$prefix"
  cmake --install "$build_dir" --prefix "$prefix" >/dev/null
  local doc
  for doc in README.md CHANGELOG.md DESIGN.md BRING_YOUR_OWN_CUDA.md example/README.md \
             example/CMakeLists.txt example/own_kernel.cpp; do
    if [ ! -f "$prefix/share/doc/tandem/$doc" ]; then
      tandem_log "the installed package lacks share/doc/tandem/$doc"
      return 1
    fi
  done
  if compgen -G "$prefix/lib*/cmake/tandem/tandem-cuda-targets.cmake" >/dev/null; then
    # With CUDA found, as a consumer on a machine with nvcc: the examples' own kernels are
    # compiled, for the architectures the package records.
    tandem_log "building the installed examples against the package, with CUDA"
    tandem_build_installed_example "$prefix" "$build_dir/example"
    if ! grep -q "tandem_own_kernel's CUDA kernels are built for" "$build_dir/example.log"; then
      tandem_log "the package has its cuda component, yet the examples' CUDA kernels were left out"
      return 1
    fi
  fi
  # As a consumer on a machine without CUDA would: the CUDA toolkit cannot be found.
  tandem_log "building the installed examples against the package, without CUDA"
  tandem_build_installed_example "$prefix" "$build_dir/example-no-cuda" \
    -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON
}
