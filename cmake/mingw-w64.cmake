# Cross-compiling for 64-bit Windows with Debian's mingw-w64 (gcc-mingw-w64-x86-64), running
# the built .exe files (tests, ctest) under Wine.
#
#   cmake -S . -B build/win64 -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64.cmake \
#         -DPW_WIN_DEPS=<prefix made by deploy/windows/build-deps.sh>
#
# PW_WIN_DEPS (cache variable, or the environment variable of the same name) is the prefix
# holding the cross-built libuv, OpenSSL, protobuf-c, cmocka and inih (include/, lib/,
# lib/pkgconfig/). Everything is linked statically, and libgcc too (-static-libgcc), so the
# .exe needs only DLLs that ship with Windows.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

set(PW_MINGW_TRIPLE x86_64-w64-mingw32)
set(CMAKE_C_COMPILER ${PW_MINGW_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${PW_MINGW_TRIPLE}-g++)
set(CMAKE_RC_COMPILER ${PW_MINGW_TRIPLE}-windres)
set(CMAKE_AR ${PW_MINGW_TRIPLE}-ar CACHE FILEPATH "")
set(CMAKE_RANLIB ${PW_MINGW_TRIPLE}-ranlib CACHE FILEPATH "")

if(NOT PW_WIN_DEPS AND DEFINED ENV{PW_WIN_DEPS})
  set(PW_WIN_DEPS "$ENV{PW_WIN_DEPS}")
endif()
set(PW_WIN_DEPS "${PW_WIN_DEPS}" CACHE PATH "Prefix of the cross-built Windows dependencies")
# try_compile projects see the toolchain file again, not the cache: pass the prefix on.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES PW_WIN_DEPS)

# Headers and libraries come only from the mingw sysroot and the dependency prefix; programs
# (protoc-c, pkg-config) from the build machine.
set(CMAKE_FIND_ROOT_PATH /usr/${PW_MINGW_TRIPLE} ${PW_WIN_DEPS})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config must read only the dependency prefix's .pc files, never the host's.
if(PW_WIN_DEPS)
  set(ENV{PKG_CONFIG_LIBDIR} "${PW_WIN_DEPS}/lib/pkgconfig")
  set(ENV{PKG_CONFIG_PATH} "")
  set(OPENSSL_ROOT_DIR "${PW_WIN_DEPS}")
endif()
set(OPENSSL_USE_STATIC_LIBS TRUE)
set(ZLIB_USE_STATIC_LIBS TRUE) # Debian libz-mingw-w64-dev: libz.a, not zlib1.dll

# No libgcc_s_seh-1.dll to ship.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static-libgcc")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static-libgcc")

# ctest and add_test run the .exe files through Wine.
find_program(PW_WINE NAMES wine wine64)
if(PW_WINE)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${PW_WINE})
endif()
