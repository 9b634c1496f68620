#!/usr/bin/env bash
# The test command: installs dependencies, builds the `asan` preset (AddressSanitizer +
# UndefinedBehaviorSanitizer, warnings as errors) and runs every test with ctest.
# Exits non-zero on any failure. Extra arguments go to ctest (e.g. -L common, -R delta).
# A test that cannot run here exits 77 and ctest lists it as skipped (tests/test_util.h,
# tests/check.sh); with CI=true (as .ci/run runs this) a skip is a failure, and so is a
# Windows part that cannot be installed (PW_WIN_REQUIRED=1).
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/install-deps.sh --browser --alertmanager --prometheus --victoria-metrics --packages # chromium for tests/web; alertmanager for test_notify; prometheus for test_remote_write_prom and promtool; victoria-metrics (with vmalert) for the vmfleet tests, test_remote_write_vm and test_global_view; mmdebstrap, lintian for test_deb
JOBS=$(nproc 2>/dev/null || echo 2)
cmake --preset asan >/dev/null
cmake --build build/asan -j"$JOBS"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Label "wine": test_e2e_wine needs the cross-built agent; deploy/windows/test.sh runs it.
ctest --test-dir build/asan --output-on-failure --timeout 600 -j"$JOBS" -LE wine "$@"
# libFuzzer: every fuzz target built with clang -fsanitize=fuzzer,address,undefined (preset
# `fuzz`, only the targets and the libraries they link) replays its committed corpus once.
cmake --preset fuzz >/dev/null
cmake --build build/fuzz --target pw_fuzzers -j"$JOBS"
ctest --test-dir build/fuzz --output-on-failure --timeout 600 -L libfuzzer
# Windows agent: cross-build poolwatch-agent.exe with mingw-w64 and run the Windows
# tests under Wine, then the end-to-end test of the .exe against build/asan's collector
# (deploy/windows/test.sh; says so loudly and skips if the toolchain cannot be installed).
# PW_SKIP_WINDOWS=1 leaves it out. A failure fails the test command.
if [ "${PW_SKIP_WINDOWS:-0}" = 1 ]; then
  echo "deploy/test.sh: PW_SKIP_WINDOWS=1: the Windows tests were NOT run" >&2
else
  [ "${CI:-}" = true ] && export PW_WIN_REQUIRED=1
  ./deploy/windows/test.sh
fi
