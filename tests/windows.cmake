# Tests of the Windows cross build (cmake/mingw-w64.cmake), included by tests/CMakeLists.txt
# when WIN32. ctest runs each .exe under Wine (CMAKE_CROSSCOMPILING_EMULATOR); run them with
# deploy/windows/test.sh, which starts a persistent wineserver first. The end-to-end tests are
# native tests that start the .exe files under Wine: tests/integration/test_e2e_wine.c
# (poolwatch-agent.exe against the native collector) and test_e2e_wine_collector.c (agent.exe,
# poolwatch-collector.exe and poolwatch.exe all under Wine, plus a Linux agent).

# Windows-only: the "win" source through its real code with recorded kernel buffers.
pw_add_test(test_source_win
  SOURCES agent/test_source_win.c LIBS pw_agent_lib LABEL windows)
# Portable tests that exercise Windows code paths when built for Windows: buffer parsing and
# the limit rule table, service arguments and paths, text parsers and codec on the Windows C
# runtime. (test_spool and test_config are POSIX-only: fork, dirent, open_memstream, mkdtemp;
# the spool's Windows file layer runs in test_e2e_wine, where the agent spools every sample.)
pw_add_test(test_source_win_parse SOURCES agent/test_source_win_parse.c LIBS pw_agent_lib
            LABEL windows)
pw_add_test(test_service_win SOURCES common/test_service_win.c LIBS pw_service LABEL windows)
pw_add_test(test_findtag SOURCES agent/test_findtag.c LIBS pw_agent_lib LABEL windows)
pw_add_test(test_source_replay SOURCES agent/test_source_replay.c LIBS pw_agent_lib LABEL windows)
pw_add_test(test_poolmon_text SOURCES common/test_poolmon_text.c LIBS pw_text LABEL windows)
pw_add_test(test_codec SOURCES common/test_codec.c LIBS pw_core LABEL windows)
pw_add_test(test_delta SOURCES common/test_delta.c LIBS pw_core LABEL windows)
target_link_libraries(test_delta PRIVATE pw_proto_before_held)
pw_add_test(test_frame SOURCES common/test_frame.c LIBS pw_core LABEL windows)
pw_add_test(test_backoff SOURCES common/test_backoff.c LIBS pw_base LABEL windows)
# The spool's Windows file layer: wide paths, a non-ASCII directory, sharing violations.
pw_add_test(test_spool_win SOURCES agent/test_spool_win.c LIBS pw_agent_lib LABEL windows)
pw_add_test(test_bigpool SOURCES agent/test_bigpool.c LIBS pw_agent_lib LABEL windows)
# System-log event XML with the cross-built expat (UTF-16 exports included)
pw_add_test(test_winevent SOURCES common/test_winevent.c LIBS pw_winevent LABEL windows)

# The collector and the CLI on Windows: the store (SQLite, zstd chunks, the checkpointer on
# libuv's threads) and its chunk codec; the API's handlers and tokens through pw_api_handle
# (test_http's direct half: its network half needs curl and openssl's CLI), the pool table,
# host retirement and ingest on the test double; `poolwatch top`'s console frames.
pw_add_test(test_store SOURCES collector/test_store.c LIBS pw_store pw_net LABEL windows)
pw_add_test(test_chunk SOURCES collector/test_chunk.c LIBS pw_store LABEL windows)
pw_add_test(test_fleet SOURCES collector/test_fleet.c LIBS pw_ingest LABEL windows)
pw_add_test(test_http SOURCES collector/test_http.c collector/double.c LIBS pw_collector_lib
            LABEL windows)
target_compile_definitions(test_http PRIVATE PW_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
pw_add_test(test_api_pool SOURCES collector/test_api_pool.c collector/double.c
            LIBS pw_collector_lib LABEL windows)
pw_add_test(test_host_lifecycle SOURCES collector/test_host_lifecycle.c collector/double.c
            LIBS pw_collector_lib LABEL windows)
pw_add_test(test_ingest SOURCES collector/test_ingest.c collector/double.c LIBS pw_collector_lib
            LABEL windows)
pw_add_test(test_events SOURCES collector/test_events.c collector/double.c LIBS pw_collector_lib
            LABEL windows)
pw_add_test(test_term_vt SOURCES cli/test_term_vt.c LIBS pw_cli LABEL windows)
