# One warning set, applied to our own targets only (never to generated protobuf code).
set(PW_WARNINGS -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
    -Wvla -Wpointer-arith -Wcast-qual -Wno-unused-parameter)
if(PW_WERROR)
  list(APPEND PW_WARNINGS -Werror)
endif()

function(pw_target_warnings target)
  target_compile_options(${target} PRIVATE ${PW_WARNINGS})
endfunction()
