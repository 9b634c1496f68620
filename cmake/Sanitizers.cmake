# PW_SANITIZE=address;undefined turns on ASan + UBSan with no recovery, for every target.
if(PW_SANITIZE)
  string(REPLACE ";" "," _pw_san "${PW_SANITIZE}")
  add_compile_options(-fsanitize=${_pw_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_pw_san})
endif()
# libFuzzer builds: every library is instrumented for coverage, not only the fuzz targets'
# own files, or the fuzzer cannot see which inputs reach new code in the decoders.
if(PW_BUILD_FUZZERS AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
