#!/usr/bin/env bash
# Cross-builds poolwatch-agent.exe, poolwatch-collector.exe and poolwatch.exe (the CLI) for
# 64-bit Windows (mingw-w64, warnings as errors, every dependency static from
# deploy/windows/build-deps.sh) and packs them with CPack (cmake/WindowsPackage.cmake):
# poolwatch-agent-<version>-win64.zip (bin/poolwatch-agent.exe, its example configuration,
# install-agent.ps1, install-common.ps1) and poolwatch-collector-<version>-win64.zip
# (bin/poolwatch-collector.exe, bin/poolwatch.exe, the collector's example configuration,
# install-collector.ps1, install-common.ps1) and poolwatch-cli-<version>-win64.zip
# (bin/poolwatch.exe alone). Prints the three .zip paths as the last lines.
#
#   deploy/windows/build.sh [--no-tests] [--no-zip]
#
# Build directory: $PW_WIN_BUILD (default build/win64). The Windows tests (tests/windows.cmake)
# are built too unless --no-tests; deploy/windows/test.sh runs them under Wine.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
TESTS=ON
ZIP=1
for a in "$@"; do
  case "$a" in
    --no-tests) TESTS=OFF ;;
    --no-zip) ZIP=0 ;;
    *) echo "build.sh: unknown argument '$a'" >&2; exit 2 ;;
  esac
done
JOBS=${PW_JOBS:-2}
B=${PW_WIN_BUILD:-$ROOT/build/win64}

./deploy/install-deps.sh --windows
DEPS=$(./deploy/windows/build-deps.sh | tail -n 1)
# pkg-config results are cached by CMake: a new dependency prefix needs a fresh configure.
if [ "$(cat "$B/.pw-win-deps" 2>/dev/null)" != "$DEPS" ]; then
  rm -rf "$B/CMakeCache.txt" "$B/CMakeFiles" "$B/.pw-win-deps"
fi
mkdir -p "$B"
cmake -S "$ROOT" -B "$B" -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/mingw-w64.cmake" \
  -DPW_WIN_DEPS="$DEPS" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPW_WERROR=ON \
  -DPW_BUILD_BENCH=OFF -DPW_BUILD_TESTS="$TESTS" \
  >"$B.configure.log" 2>&1 || { cat "$B.configure.log" >&2; exit 1; }
echo "$DEPS" >"$B/.pw-win-deps"
cmake --build "$B" -j"$JOBS"

# Each .exe must need only DLLs that ship with Windows (the zips pack nothing else).
EXE=$B/agent/poolwatch-agent.exe
SYSTEM_DLLS='^(kernel32|user32|advapi32|ws2_32|iphlpapi|userenv|dbghelp|ole32|shell32|gdi32|crypt32|bcrypt|msvcrt|ntdll|psapi|secur32|rpcrt4|oleaut32|shlwapi|api-ms-win-.*)\.dll$'
for exe in "$EXE" "$B/collector/poolwatch-collector.exe" "$B/cli/poolwatch.exe"; do
  bad=$(x86_64-w64-mingw32-objdump -p "$exe" | awk '/DLL Name:/ {print tolower($3)}' |
    grep -Ev "$SYSTEM_DLLS" || true)
  if [ -n "$bad" ]; then
    echo "build.sh: $(basename "$exe") imports non-system DLLs: $bad" >&2
    exit 1
  fi
done
[ "$ZIP" = 1 ] || exit 0
# The packed example configurations come from the .exe files themselves, so they have the
# Windows defaults.
wine_run() {
  WINEPREFIX=${WINEPREFIX:-$ROOT/build/wineprefix} WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=" \
    timeout 300 wine "$@" </dev/null
}
wine_run "$EXE" --print-example >"$B/agent.conf.example"
grep -q '^\[collector\]' "$B/agent.conf.example" ||
  { echo "build.sh: poolwatch-agent.exe --print-example failed under Wine" >&2; exit 1; }
wine_run "$B/collector/poolwatch-collector.exe" --print-example >"$B/collector.conf.example"
grep -q '^\[store\]' "$B/collector.conf.example" ||
  { echo "build.sh: poolwatch-collector.exe --print-example failed under Wine" >&2; exit 1; }
(cd "$B" && cpack -G ZIP -C RelWithDebInfo >"$B.cpack.log" 2>&1) ||
  { cat "$B.cpack.log" >&2; exit 1; }
for z in agent collector cli; do
  ls -1 "$B"/poolwatch-$z-*-win64.zip | tail -n 1
done
