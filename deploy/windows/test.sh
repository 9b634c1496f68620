#!/usr/bin/env bash
# The Windows tests, run by deploy/test.sh after the native ctest (or alone):
#   1. installs the mingw-w64 toolchain and Wine (deploy/install-deps.sh --windows); if that is
#      impossible, says so loudly and exits 0 (skipped), unless PW_WIN_REQUIRED=1 or CI=true;
#   2. builds the dependencies (cached), poolwatch-agent.exe, poolwatch-collector.exe,
#      poolwatch.exe and the Windows tests (deploy/windows/build.sh, build/win64);
#   3. starts a persistent wineserver, warms Wine up, runs the Windows tests under Wine with
#      ctest (tests/windows.cmake, label "windows");
#   4. runs the end-to-end tests (label "wine", left out of the native ctest run) from the
#      native build (default build/asan, or $PW_NATIVE_BUILD): test_e2e_wine (poolwatch-agent.exe
#      under Wine against the native collector) and test_e2e_wine_collector (the agent, the
#      collector and the CLI all under Wine, a native Linux agent streaming to that collector,
#      the collector as a service of Wine's SCM).
# Exits non-zero on any failure. Extra arguments go to the Windows ctest (e.g. -R spool).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
JOBS=${PW_JOBS:-2}
B=${PW_WIN_BUILD:-$ROOT/build/win64}
NATIVE=${PW_NATIVE_BUILD:-$ROOT/build/asan}
t0=$(date +%s)

if ! ./deploy/install-deps.sh --windows; then
  echo "##################################################################################" >&2
  echo "## WINDOWS TESTS SKIPPED: the mingw-w64 toolchain / Wine could not be installed ##" >&2
  echo "##################################################################################" >&2
  [ "${PW_WIN_REQUIRED:-0}" = 1 ] || [ "${CI:-}" = true ] && exit 1
  exit 0
fi

./deploy/windows/build.sh
t_build=$(date +%s)

# Wine: its own prefix under build/, a persistent server (else every .exe pays the start-up
# and ctest can hang on Wine's background services holding its output pipe), and one warm-up.
export WINEPREFIX=${WINEPREFIX:-$ROOT/build/wineprefix}
export WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=" # no Mono/Gecko install dialogs
WINE=$(command -v wine)
WINESERVER=$(command -v wineserver || echo /usr/lib/wine/wineserver)
"$WINESERVER" -p || true # already running (same prefix) is fine
trap '"$WINESERVER" -k >/dev/null 2>&1 || true' EXIT
timeout 300 "$WINE" cmd /c exit </dev/null >/dev/null 2>&1 || true
# Wine's service manager gives a service 10 s to connect to it (Windows: 30 s), from
# ServicesPipeTimeout when services.exe starts. A cold .exe on a loaded machine can take longer:
# a fresh clone's CI saw the collector's service stopped at its first start, and a test service
# that sleeps 15 s first reproduces it. Set 60 s once per prefix and restart the server so that
# services.exe reads it. Wine 8 reads the value only as REG_SZ (Windows documents a DWORD).
SPT='HKLM\System\CurrentControlSet\Control'
if ! "$WINE" reg query "$SPT" /v ServicesPipeTimeout </dev/null 2>/dev/null | grep -q REG_SZ; then
  "$WINE" reg add "$SPT" /v ServicesPipeTimeout /t REG_SZ /d 60000 /f </dev/null >/dev/null 2>&1
  "$WINESERVER" -k >/dev/null 2>&1 || true
  "$WINESERVER" -w >/dev/null 2>&1 || true
  "$WINESERVER" -p || true
  timeout 300 "$WINE" cmd /c exit </dev/null >/dev/null 2>&1 || true
fi

# Unit tests under Wine (CMAKE_CROSSCOMPILING_EMULATOR); Wine prints CRLF, ctest does not care.
ctest --test-dir "$B" --output-on-failure --timeout 300 -j"$JOBS" "$@" </dev/null
t_unit=$(date +%s)

# End to end: the native collector (built in the native tree) and the Windows agent.
if [ ! -f "$NATIVE/CMakeCache.txt" ]; then
  cmake --preset asan >/dev/null
  NATIVE=$ROOT/build/asan
fi
cmake --build "$NATIVE" -j"$JOBS" --target test_e2e_wine test_e2e_wine_collector \
  poolwatch-collector poolwatch-agent
export PW_WIN_AGENT_EXE=$B/agent/poolwatch-agent.exe
export PW_WIN_AGENT_TESTHOOKS_EXE=$B/agent/poolwatch-agent-testhooks.exe
export PW_WIN_COLLECTOR_EXE=$B/collector/poolwatch-collector.exe
export PW_WIN_CLI_EXE=$B/cli/poolwatch.exe
export PW_WINE=$WINE
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$NATIVE" --output-on-failure --timeout 300 -j"$JOBS" -L wine </dev/null
t_end=$(date +%s)
echo "windows tests: build $((t_build - t0)) s, unit tests under Wine $((t_unit - t_build)) s," \
  "end to end $((t_end - t_unit)) s"
