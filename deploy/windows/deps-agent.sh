# Sourced by deploy/windows/build-deps.sh: the agent's dependencies (libuv, protobuf-c's runtime,
# cmocka, inih, OpenSSL), cross-built from the unpacked Debian sources under $SRC into $OUT.
# Its text is part of the cache key of the first prefix.
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

