# Tests of the Windows cross build (cmake/mingw-w64.cmake), included by tests/CMakeLists.txt
# when WIN32. ctest runs each .exe under Wine (CMAKE_CROSSCOMPILING_EMULATOR); run them with
# deploy/windows/test.sh, which starts a persistent wineserver first. The collector is not
# built for Windows: the end-to-end test (tests/integration/test_e2e_wine.c) is a native test
# that starts poolwatch-agent.exe under Wine.

# Windows-only: the "win" source through its real code with recorded kernel buffers.
pw_add_test(test_source_win
  SOURCES agent/test_source_win.c LIBS pw_agent_lib LABEL windows)
# Portable tests that exercise Windows code paths when built for Windows: buffer parsing and
# the limit rule table, service arguments and paths, text parsers and codec on the Windows C
# runtime. (test_spool and test_config are POSIX-only: fork, dirent, open_memstream, mkdtemp;
# the spool's Windows file layer runs in test_e2e_wine, where the agent spools every sample.)
pw_add_test(test_source_win_parse SOURCES agent/test_source_win_parse.c LIBS pw_agent_lib
            LABEL windows)
pw_add_test(test_service_win SOURCES agent/test_service_win.c LIBS pw_agent_lib LABEL windows)
pw_add_test(test_source_replay SOURCES agent/test_source_replay.c LIBS pw_agent_lib LABEL windows)
pw_add_test(test_poolmon_text SOURCES common/test_poolmon_text.c LIBS pw_text LABEL windows)
pw_add_test(test_codec SOURCES common/test_codec.c LIBS pw_core LABEL windows)
pw_add_test(test_delta SOURCES common/test_delta.c LIBS pw_core LABEL windows)
pw_add_test(test_frame SOURCES common/test_frame.c LIBS pw_core LABEL windows)
pw_add_test(test_backoff SOURCES common/test_backoff.c LIBS pw_base LABEL windows)
# The spool's Windows file layer: wide paths, a non-ASCII directory, sharing violations.
pw_add_test(test_spool_win SOURCES agent/test_spool_win.c LIBS pw_agent_lib LABEL windows)
pw_add_test(test_bigpool SOURCES agent/test_bigpool.c LIBS pw_agent_lib LABEL windows)
