# PW_SANITIZE=address;undefined turns on ASan + UBSan with no recovery, for every target.
if(PW_SANITIZE)
  string(REPLACE ";" "," _pw_san "${PW_SANITIZE}")
  add_compile_options(-fsanitize=${_pw_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_pw_san})
endif()
