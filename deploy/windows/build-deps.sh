#!/usr/bin/env bash
# Fetches the Debian source packages of poolwatch's C dependencies and cross-builds them for
# 64-bit Windows with mingw-w64, as static libraries, into a prefix that cmake/mingw-w64.cmake
# reads (PW_WIN_DEPS). Prints that prefix as the last line of stdout.
#
# Two stages, each cached under its own key: the agent's dependencies (deps-agent.sh: libuv,
# protobuf-c, OpenSSL, cmocka, inih), then the collector's and the CLI's added to a copy of
# that prefix (deps-collector.sh: SQLite, jansson, http-parser, zstd, snappy). The collector
# stage's recipe can change without rebuilding OpenSSL.
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
# Collector stage: sqlite3 (its full source tree: the amalgamation is generated with the
# host's tclsh), jansson, http-parser, libzstd/bookworm (as openssl), snappy (C++: linked with a
# static libstdc++), expat/bookworm (as openssl; the agent's System-log events too:
# deps-collector.sh says why here).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
JOBS=${PW_JOBS:-2}
CACHE_ROOT=${PW_WIN_DEPS_CACHE:-$HOME/.cache/poolwatch-win-deps}
WORK=${PW_WIN_DEPS_WORK:-$ROOT/build/windows-deps-src}
TRIPLE=x86_64-w64-mingw32
TOOLCHAIN=$ROOT/cmake/mingw-w64.cmake
PKGS=(libuv1 protobuf-c openssl/bookworm cmocka)
COLL_PKGS=(sqlite3 jansson http-parser libzstd/bookworm snappy expat/bookworm)

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

# ---- versions and cache keys ---------------------------------------------------------------
dsc_of() { # prints the .dsc file name apt-get source would fetch for $1, or nothing
  apt-get "${APT_OPTS[@]}" source --print-uris "$1" 2>/dev/null | awk '/\.dsc /{print $2; exit}'
}
versions_of() { # prints the .dsc names of packages "$@", or fails naming the missing one
  local p d v=""
  for p in "$@"; do
    d=$(dsc_of "$p")
    [ -n "$d" ] || { log "no source package for $p in the archive"; return 1; }
    v+="$d "
  done
  echo "$v"
}
HERE=$ROOT/deploy/windows
VERSIONS=$(versions_of "${PKGS[@]}")
COLL_VERSIONS=$(versions_of "${COLL_PKGS[@]}")
INIH_DSC=$(dsc_of libinih)
CC_VER="$($TRIPLE-gcc -dumpversion) $($TRIPLE-g++ -dumpversion)"
RECIPE=$(cat "$HERE/deps-agent.sh" "$TOOLCHAIN" "$HERE"/inih-compat/* | sha256sum | cut -c1-12)
KEY=$(printf '%s %s %s %s' "$VERSIONS" "$INIH_DSC" "$RECIPE" "$CC_VER" | sha256sum | cut -c1-16)
PREFIX=$CACHE_ROOT/$KEY
COLL_RECIPE=$(cat "$HERE/deps-collector.sh" | sha256sum | cut -c1-12)
COLL_KEY=$(printf '%s %s %s' "$KEY" "$COLL_VERSIONS" "$COLL_RECIPE" | sha256sum | cut -c1-16)
COLL_PREFIX=$CACHE_ROOT/$COLL_KEY
# Two builds at once (two clones, two CI jobs) must not share a half-built prefix: the second
# waits for the first and then takes its result from the cache.
mkdir -p "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/.lock"
flock 9
if [ -f "$COLL_PREFIX/.complete" ]; then
  log "cached: $COLL_PREFIX ($(cat "$COLL_PREFIX/.complete"))"
  echo "$COLL_PREFIX"
  exit 0
fi

# ---- helpers for the recipes ----------------------------------------------------------------
SRC=$WORK/src
srcdir() { find "$SRC" -maxdepth 1 -mindepth 1 -type d -name "$1-*" | head -1; }
fetch() { # fetch <package...>: unpacked into a fresh $SRC
  rm -rf "$SRC"
  mkdir -p "$SRC"
  (cd "$SRC" && apt-get "${APT_OPTS[@]}" -qq source "$@" >"$WORK/apt-source.log" 2>&1) ||
    { tail -20 "$WORK/apt-source.log" >&2; log "apt-get source failed"; exit 1; }
}
cmake_dep() { # cmake_dep <srcdir> <name> <cmake args...>
  local s=$1 n=$2
  shift 2
  cmake -S "$s" -B "$WORK/build-$n" -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$OUT" -DCMAKE_INSTALL_LIBDIR=lib "$@" \
    >"$WORK/$n.log" 2>&1
  cmake --build "$WORK/build-$n" -j"$JOBS" >>"$WORK/$n.log" 2>&1
  cmake --install "$WORK/build-$n" >>"$WORK/$n.log" 2>&1
}
pc() { # pc <name> <version> <Libs> [Cflags]: written with the final prefix $DEST
  cat >"$OUT/lib/pkgconfig/$1.pc" <<PC
prefix=$DEST
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

# ---- stage 1: the agent's dependencies ------------------------------------------------------
if [ ! -f "$PREFIX/.complete" ]; then
  log "building $VERSIONS${INIH_DSC:-(inih-compat)} into $PREFIX"
  DEST=$PREFIX
  OUT=$PREFIX.tmp
  rm -rf "$OUT"
  mkdir -p "$OUT"/{include,lib/pkgconfig}
  fetch "${PKGS[@]}"
  HAVE_INIH_SRC=0
  if [ -n "$INIH_DSC" ] &&
    (cd "$SRC" && apt-get "${APT_OPTS[@]}" -qq source libinih >>"$WORK/apt-source.log" 2>&1); then
    HAVE_INIH_SRC=1
  else
    log "libinih source not served by this archive: using deploy/windows/inih-compat"
  fi
  # shellcheck source=deps-agent.sh
  . "$HERE/deps-agent.sh"
  echo "$VERSIONS${INIH_DSC:-inih-compat}" >"$OUT/.complete"
  rm -rf "$PREFIX"
  mv "$OUT" "$PREFIX"
  rm -rf "$SRC" "$WORK"/build-*
  log "done: $PREFIX"
fi

# ---- stage 2: the collector's and the CLI's, added to a copy of stage 1 ---------------------
log "building $COLL_VERSIONS into $COLL_PREFIX (on $KEY)"
DEST=$COLL_PREFIX
OUT=$COLL_PREFIX.tmp
rm -rf "$OUT"
cp -a "$PREFIX" "$OUT"
# The copied .pc files name the stage-1 prefix: point them at this one.
sed -i "s|^prefix=.*|prefix=$DEST|" "$OUT"/lib/pkgconfig/*.pc
fetch "${COLL_PKGS[@]}"
# shellcheck source=deps-collector.sh
. "$HERE/deps-collector.sh"
echo "$(cat "$PREFIX/.complete") $COLL_VERSIONS" >"$OUT/.complete"
rm -rf "$COLL_PREFIX"
mv "$OUT" "$COLL_PREFIX"
rm -rf "$SRC" "$WORK"/build-*
log "done: $COLL_PREFIX"
echo "$COLL_PREFIX"
