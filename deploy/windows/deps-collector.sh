# Sourced by deploy/windows/build-deps.sh: the collector's and the CLI's dependencies (SQLite,
# jansson, http-parser, zstd, snappy) and expat, cross-built from the unpacked Debian sources
# under $SRC into $OUT (a copy of the agent's prefix). Its text is part of the second prefix's
# cache key. expat is read by the agent too (its System-log events: common/winevent.c), but it
# is built here: this stage is the prefix every Windows binary links, and adding it to the
# first stage would rebuild OpenSSL for a 200 KB library.

# SQLite: Debian ships the full source tree; its amalgamation (sqlite3.c) is generated on the
# build machine (needs tclsh) and compiled once with the options of Debian's libsqlite3 that
# matter to a server (thread-safe, FTS/RTREE/JSON left to defaults: poolwatch uses none).
s=$(srcdir sqlite3)
log "sqlite3 amalgamation ($s)"
mkdir -p "$WORK/build-sqlite3"
(
  cd "$WORK/build-sqlite3"
  "$s/configure" --disable-tcl >"$WORK/sqlite3.log" 2>&1
  make -j"$JOBS" sqlite3.c >>"$WORK/sqlite3.log" 2>&1
  $TRIPLE-gcc -O2 -DSQLITE_THREADSAFE=1 -DSQLITE_DEFAULT_FOREIGN_KEYS=0 \
    -DSQLITE_ENABLE_COLUMN_METADATA -DSQLITE_ENABLE_DBSTAT_VTAB -DSQLITE_MAX_SCHEMA_RETRY=25 \
    -c sqlite3.c -o sqlite3.o >>"$WORK/sqlite3.log" 2>&1
  $TRIPLE-ar rcs "$OUT/lib/libsqlite3.a" sqlite3.o
  cp sqlite3.h sqlite3ext.h "$OUT/include/"
)
pc sqlite3 "$(basename "$s" | sed 's/^sqlite3-//')" "-lsqlite3"

# jansson: static library.
s=$(srcdir jansson)
log "jansson ($s)"
cmake_dep "$s" jansson -DJANSSON_BUILD_DOCS=OFF -DJANSSON_EXAMPLES=OFF -DJANSSON_WITHOUT_TESTS=ON \
  -DJANSSON_BUILD_SHARED_LIBS=OFF
rm -f "$OUT"/lib/pkgconfig/jansson.pc
pc jansson "$(basename "$s" | sed 's/^jansson-//')" "-ljansson"

# http-parser: one C file (Debian's libhttp-parser-dev has no .pc either: CMake finds the
# library and header by name).
s=$(srcdir http-parser)
log "http-parser ($s)"
mkdir -p "$WORK/build-http-parser"
$TRIPLE-gcc -O2 -I"$s" -DHTTP_PARSER_STRICT=0 -c "$s/http_parser.c" \
  -o "$WORK/build-http-parser/http_parser.o"
$TRIPLE-ar rcs "$OUT/lib/libhttp_parser.a" "$WORK/build-http-parser/http_parser.o"
cp "$s/http_parser.h" "$OUT/include/"

# zstd: the library only, single-threaded (the store compresses on its own threads).
s=$(srcdir libzstd)
log "zstd ($s)"
cmake_dep "$s/build/cmake" zstd -DZSTD_BUILD_PROGRAMS=OFF -DZSTD_BUILD_SHARED=OFF \
  -DZSTD_BUILD_STATIC=ON -DZSTD_BUILD_TESTS=OFF -DZSTD_MULTITHREAD_SUPPORT=OFF \
  -DZSTD_LEGACY_SUPPORT=OFF
rm -f "$OUT"/lib/pkgconfig/libzstd.pc
pc libzstd "$(basename "$s" | sed 's/^libzstd-//')" "-lzstd"

# snappy: C++, used through its C API (snappy-c.h); the C programs that link it get the static
# libstdc++ so that no libstdc++-6.dll is needed. Debian's patch adds the static library as a
# second target (snappy-static) beside a shared one: with BUILD_SHARED_LIBS=OFF both would write
# libsnappy.a at once, so the shared one is built too and dropped.
s=$(srcdir snappy)
log "snappy ($s)"
cmake_dep "$s" snappy -DSNAPPY_BUILD_TESTS=OFF -DSNAPPY_BUILD_BENCHMARKS=OFF \
  -DBUILD_SHARED_LIBS=ON -DCMAKE_SHARED_LINKER_FLAGS="-static-libgcc -static-libstdc++"
rm -rf "$OUT"/lib/cmake/Snappy "$OUT"/lib/libsnappy.dll.a "$OUT"/bin/libsnappy.dll
pc snappy "$(basename "$s" | sed 's/^snappy-//')" "-lsnappy -l:libstdc++.a"

# expat: the XML parser of the System-log events (common/winevent.c; the source package keeps
# upstream's tree, the library in expat/), a static library (its
# users define XML_STATIC: the Cflags below), no tools, tests or docs, and no DTD support:
# poolwatch refuses a DOCTYPE anyway, and Debian's security patches test `#if XML_DTD == 1`,
# which CMake's empty XML_DTD breaks (their own build uses autotools).
s=$(srcdir expat)
log "expat ($s)"
cmake_dep "$s/expat" expat -DEXPAT_BUILD_TOOLS=OFF -DEXPAT_BUILD_EXAMPLES=OFF -DEXPAT_BUILD_TESTS=OFF \
  -DEXPAT_BUILD_DOCS=OFF -DEXPAT_BUILD_FUZZERS=OFF -DEXPAT_SHARED_LIBS=OFF -DEXPAT_DTD=OFF
rm -rf "$OUT"/lib/pkgconfig/expat.pc "$OUT"/lib/cmake/expat-*
pc expat "$(basename "$s" | sed 's/^expat-//')" "-lexpat" "-DXML_STATIC"
