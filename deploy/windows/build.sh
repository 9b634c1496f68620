#!/usr/bin/env bash
# Cross-builds poolwatch-agent.exe for 64-bit Windows (mingw-w64, warnings as errors, static
# libuv/OpenSSL/protobuf-c/inih from deploy/windows/build-deps.sh) and packs
# poolwatch-agent-<version>-win64.zip with CPack: bin/poolwatch-agent.exe (and any non-system
# DLL it imports; none with the static build), the example configuration and
# install-agent.ps1. Prints the .zip path as the last line.
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
  -DPW_BUILD_COLLECTOR=OFF -DPW_BUILD_CLI=OFF -DPW_BUILD_BENCH=OFF -DPW_BUILD_TESTS="$TESTS" \
  >"$B.configure.log" 2>&1 || { cat "$B.configure.log" >&2; exit 1; }
echo "$DEPS" >"$B/.pw-win-deps"
cmake --build "$B" -j"$JOBS"

# The .exe must need only DLLs that ship with Windows (the zip packs nothing else).
EXE=$B/agent/poolwatch-agent.exe
SYSTEM_DLLS='^(kernel32|user32|advapi32|ws2_32|iphlpapi|userenv|dbghelp|ole32|shell32|gdi32|crypt32|bcrypt|msvcrt|ntdll|psapi|secur32|rpcrt4|oleaut32|shlwapi|api-ms-win-.*)\.dll$'
bad=$(x86_64-w64-mingw32-objdump -p "$EXE" | awk '/DLL Name:/ {print tolower($3)}' |
  grep -Ev "$SYSTEM_DLLS" || true)
if [ -n "$bad" ]; then
  echo "build.sh: poolwatch-agent.exe imports non-system DLLs: $bad" >&2
  exit 1
fi
[ "$ZIP" = 1 ] || exit 0
# The packed example configuration comes from the .exe itself, so it has the Windows defaults.
WINEPREFIX=${WINEPREFIX:-$ROOT/build/wineprefix} WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=" \
  timeout 300 wine "$EXE" --print-example </dev/null >"$B/agent.conf.example"
grep -q '^\[collector\]' "$B/agent.conf.example" ||
  { echo "build.sh: poolwatch-agent.exe --print-example failed under Wine" >&2; exit 1; }
(cd "$B" && cpack -G ZIP -C RelWithDebInfo >"$B.cpack.log" 2>&1) ||
  { cat "$B.cpack.log" >&2; exit 1; }
ls -1 "$B"/poolwatch-agent-*-win64.zip | tail -n 1
