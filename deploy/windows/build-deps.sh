#!/usr/bin/env bash
# Fetches the Debian source packages of poolwatch's C dependencies and cross-builds them for
# 64-bit Windows with mingw-w64, as static libraries, into a prefix that cmake/mingw-w64.cmake
# reads (PW_WIN_DEPS). Prints that prefix as the last line of stdout.
#
#   deploy/windows/build-deps.sh          # build or reuse the cached prefix
#
# Cache: $PW_WIN_DEPS_CACHE (default ~/.cache/poolwatch-win-deps)/<key>, where <key> hashes the
# source package versions and this script's recipe; a complete prefix is reused as is, so
# repeated runs cost only the apt index refresh (about 2 s). Work files go to
# $PW_WIN_DEPS_WORK (default build/windows-deps-src, removed after a successful build).
#
# apt-get source needs deb-src entries. They are derived at run time from the machine's own apt
# configuration (every "Types: deb" stanza and "deb" line becomes deb-src, same archive) and
# written to a private apt directory, so the system's apt state is not touched and no archive
# host name is written into the repository. Needs dpkg-dev, the mingw-w64 compiler and cmake
# (deploy/install-deps.sh --windows).
#
# Packages: libuv1, protobuf-c (the C runtime only; the host's protoc-c generates the code),
# openssl/bookworm (the security suite's newer source is not always on the mirror), cmocka,
# and libinih when the archive serves it; otherwise deploy/windows/inih-compat/ (our own
# implementation of the part of inih's API that common/config.c uses) stands in for it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
JOBS=${PW_JOBS:-2}
CACHE_ROOT=${PW_WIN_DEPS_CACHE:-$HOME/.cache/poolwatch-win-deps}
WORK=${PW_WIN_DEPS_WORK:-$ROOT/build/windows-deps-src}
TRIPLE=x86_64-w64-mingw32
TOOLCHAIN=$ROOT/cmake/mingw-w64.cmake
PKGS=(libuv1 protobuf-c openssl/bookworm cmocka)

log() { echo "build-deps: $*" >&2; }

# ---- private apt configuration with deb-src entries --------------------------------------
APTDIR=$WORK/apt
mkdir -p "$APTDIR/etc/sources.list.d" "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial"
: >"$APTDIR/etc/sources.list.d/pw-deb-src.sources"
: >"$APTDIR/etc/sources.list.d/pw-deb-src.list"
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  # One stanza per paragraph; keep those whose Types include "deb", as deb-src only.
  awk 'BEGIN { RS = ""; ORS = "\n\n" }
       /(^|\n)Types:[^\n]*(^|[ \t])deb([ \t]|\n|$)/ {
         gsub(/Types:[^\n]*/, "Types: deb-src"); print }' "$f" \
    >>"$APTDIR/etc/sources.list.d/pw-deb-src.sources"
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] || continue
  sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" >>"$APTDIR/etc/sources.list.d/pw-deb-src.list"
done
APT_OPTS=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$APTDIR/etc/sources.list.d"
  -o "Dir::State::Lists=$APTDIR/lists" -o "Dir::Cache=$APTDIR/cache" -o Debug::NoLocking=1
  -o APT::Sandbox::User="$(id -un)" -o Acquire::Retries=3)
log "refreshing the deb-src indices"
apt-get "${APT_OPTS[@]}" -qq update >"$WORK/apt-update.log" 2>&1 ||
  { cat "$WORK/apt-update.log" >&2; log "apt-get update failed"; exit 1; }

# ---- versions and cache key --------------------------------------------------------------
dsc_of() { # prints the .dsc file name apt-get source would fetch for $1, or nothing
  apt-get "${APT_OPTS[@]}" source --print-uris "$1" 2>/dev/null | awk '/\.dsc /{print $2; exit}'
}
VERSIONS=""
for p in "${PKGS[@]}"; do
  d=$(dsc_of "$p")
  [ -n "$d" ] || { log "no source package for $p in the archive"; exit 1; }
  VERSIONS+="$d "
done
INIH_DSC=$(dsc_of libinih)
RECIPE=$(cat "$0" "$TOOLCHAIN" "$ROOT"/deploy/windows/inih-compat/* | sha256sum | cut -c1-12)
KEY=$(printf '%s %s %s %s' "$VERSIONS" "$INIH_DSC" "$RECIPE" "$($TRIPLE-gcc -dumpversion)" |
  sha256sum | cut -c1-16)
PREFIX=$CACHE_ROOT/$KEY
# Two builds at once (two clones, two CI jobs) must not share a half-built prefix: the second
# waits for the first and then takes its result from the cache.
mkdir -p "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/.lock"
flock 9
if [ -f "$PREFIX/.complete" ]; then
  log "cached: $PREFIX ($(cat "$PREFIX/.complete"))"
  echo "$PREFIX"
  exit 0
fi
log "building $VERSIONS${INIH_DSC:-(inih-compat)} into $PREFIX"

# ---- fetch ----------------------------------------------------------------------------------
SRC=$WORK/src
rm -rf "$SRC" "$PREFIX.tmp"
mkdir -p "$SRC" "$PREFIX.tmp"/{include,lib/pkgconfig}
OUT=$PREFIX.tmp
cd "$SRC"
apt-get "${APT_OPTS[@]}" -qq source "${PKGS[@]}" >"$WORK/apt-source.log" 2>&1 ||
  { tail -20 "$WORK/apt-source.log" >&2; log "apt-get source failed"; exit 1; }
HAVE_INIH_SRC=0
if [ -n "$INIH_DSC" ] && apt-get "${APT_OPTS[@]}" -qq source libinih >>"$WORK/apt-source.log" 2>&1
then
  HAVE_INIH_SRC=1
else
  log "libinih source not served by this archive: using deploy/windows/inih-compat"
fi
srcdir() { find "$SRC" -maxdepth 1 -mindepth 1 -type d -name "$1-*" | head -1; }

cmake_dep() { # cmake_dep <srcdir> <name> <cmake args...>
  local s=$1 n=$2
  shift 2
  cmake -S "$s" -B "$WORK/build-$n" -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$OUT" -DCMAKE_INSTALL_LIBDIR=lib "$@" \
    >"$WORK/$n.log" 2>&1
  cmake --build "$WORK/build-$n" -j"$JOBS" >>"$WORK/$n.log" 2>&1
  cmake --install "$WORK/build-$n" >>"$WORK/$n.log" 2>&1
}
pc() { # pc <name> <version> <Libs> [Cflags]
  cat >"$OUT/lib/pkgconfig/$1.pc" <<PC
prefix=$PREFIX
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: $1
Description: $1 cross-built for Windows by poolwatch deploy/windows/build-deps.sh
Version: $2
Libs: -L\${libdir} $3
Cflags: -I\${includedir} ${4:-}
PC
}
trap 'log "failed; logs in $WORK"' ERR

# libuv: static library libuv_a.a plus the Windows libraries it calls.
s=$(srcdir libuv1)
log "libuv ($s)"
cmake_dep "$s" libuv -DLIBUV_BUILD_TESTS=OFF -DLIBUV_BUILD_BENCH=OFF
rm -f "$OUT"/lib/libuv.dll.a "$OUT"/bin/libuv.dll "$OUT"/bin/uv.dll "$OUT"/lib/pkgconfig/libuv*.pc
pc libuv "$(basename "$s" | sed 's/^libuv1-//')" \
  "-luv_a -lws2_32 -liphlpapi -luserenv -ldbghelp -lole32 -luuid -lshell32 -luser32 -ladvapi32"

# protobuf-c: the runtime is one C file.
s=$(srcdir protobuf-c)
log "protobuf-c runtime ($s)"
mkdir -p "$OUT/include/protobuf-c" "$WORK/build-protobuf-c"
$TRIPLE-gcc -O2 -I"$s" -c "$s/protobuf-c/protobuf-c.c" -o "$WORK/build-protobuf-c/protobuf-c.o"
$TRIPLE-ar rcs "$OUT/lib/libprotobuf-c.a" "$WORK/build-protobuf-c/protobuf-c.o"
cp "$s/protobuf-c/protobuf-c.h" "$OUT/include/protobuf-c/"
pc libprotobuf-c "$(basename "$s" | sed 's/^protobuf-c-//')" "-lprotobuf-c"

# cmocka: static library only.
s=$(srcdir cmocka)
log "cmocka ($s)"
cmake_dep "$s" cmocka -DWITH_STATIC_LIB=ON -DWITH_EXAMPLES=OFF -DUNIT_TESTING=OFF
rm -f "$OUT"/lib/libcmocka.dll.a "$OUT"/bin/libcmocka.dll "$OUT"/lib/pkgconfig/cmocka.pc
pc cmocka "$(basename "$s" | sed 's/^cmocka-//')" "-lcmocka-static"

# inih: Debian's ini.c when available, else the compatible stand-in. Both get the run-time
# switches of Debian's build (common/config.c sets them before each parse).
log "inih"
mkdir -p "$WORK/build-inih"
if [ "$HAVE_INIH_SRC" = 1 ]; then
  s=$(srcdir libinih)
  ver=$(basename "$s" | sed 's/^libinih-//')
else
  s=$ROOT/deploy/windows/inih-compat
  ver=compat
fi
$TRIPLE-gcc -O2 -std=c11 -I"$s" -c "$s/ini.c" -o "$WORK/build-inih/ini.o"
$TRIPLE-ar rcs "$OUT/lib/libinih.a" "$WORK/build-inih/ini.o"
cp "$s/ini.h" "$OUT/include/"
pc inih "$ver" "-linih"

# OpenSSL: libraries and headers only (no apps, tests or loadable modules).
s=$(srcdir openssl)
log "openssl ($s): the long one, about 2-3 min on 2 cores"
(
  cd "$s"
  ./Configure mingw64 --cross-compile-prefix=$TRIPLE- --prefix="$OUT" --libdir=lib \
    --openssldir="C:/ProgramData/poolwatch/ssl" no-shared no-module no-tests \
    >"$WORK/openssl.log" 2>&1
  make -j"$JOBS" build_libs >>"$WORK/openssl.log" 2>&1
  make install_dev >>"$WORK/openssl.log" 2>&1
)
# Our own .pc: the installed ones carry the temporary prefix.
rm -f "$OUT"/lib/pkgconfig/{libcrypto,libssl,openssl}.pc
v=$(basename "$s" | sed 's/^openssl-//')
pc libcrypto "$v" "-lcrypto -lws2_32 -lgdi32 -lcrypt32 -luser32 -ladvapi32"
pc libssl "$v" "-lssl -lcrypto -lws2_32 -lgdi32 -lcrypt32 -luser32 -ladvapi32"
pc openssl "$v" "-lssl -lcrypto -lws2_32 -lgdi32 -lcrypt32 -luser32 -ladvapi32"

echo "$VERSIONS${INIH_DSC:-inih-compat}" >"$OUT/.complete"
rm -rf "$PREFIX"
mv "$OUT" "$PREFIX"
rm -rf "$WORK/src" "$WORK"/build-*
log "done: $PREFIX"
echo "$PREFIX"
