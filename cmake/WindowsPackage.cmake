# The Windows packages (deploy/windows/build.sh runs cpack -G ZIP), one .zip per component:
#   poolwatch-agent-<v>-win64.zip      bin/poolwatch-agent.exe, config/agent.conf.example,
#                                      install-agent.ps1, install-common.ps1, doc/windows.md
#   poolwatch-collector-<v>-win64.zip  bin/poolwatch-collector.exe, bin/poolwatch.exe,
#                                      config/collector.conf.example, install-collector.ps1,
#                                      install-common.ps1, pki/pki.sh, doc/windows.md
#   poolwatch-cli-<v>-win64.zip        bin/poolwatch.exe, doc/windows.md (a workstation's CLI)
# Only these components are packed (the plain install rules of agent/, collector/ and cli/ are
# left out). The example configurations with the Windows defaults (source win, spool and store under
# %ProgramData%): deploy/windows/build.sh writes them with `--print-example` under Wine.
foreach(_c agent collector cli)
  set(_top_${_c} poolwatch-${_c}-${PROJECT_VERSION}-win64)
endforeach()
install(TARGETS poolwatch-agent RUNTIME DESTINATION ${_top_agent}/bin COMPONENT agent)
install(TARGETS poolwatch-collector poolwatch RUNTIME DESTINATION ${_top_collector}/bin
        COMPONENT collector)
install(TARGETS poolwatch RUNTIME DESTINATION ${_top_cli}/bin COMPONENT cli)
install(FILES ${CMAKE_BINARY_DIR}/agent.conf.example DESTINATION ${_top_agent}/config
        COMPONENT agent)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/windows/install-agent.ps1 DESTINATION ${_top_agent}
        COMPONENT agent)
install(FILES ${CMAKE_BINARY_DIR}/collector.conf.example DESTINATION ${_top_collector}/config
        COMPONENT collector)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/windows/install-collector.ps1
        DESTINATION ${_top_collector} COMPONENT collector)
# the steps both install scripts share (they dot-source it)
foreach(_c agent collector)
  install(FILES ${CMAKE_SOURCE_DIR}/deploy/windows/install-common.ps1 DESTINATION ${_top_${_c}}
          COMPONENT ${_c})
endforeach()
# A first CA and certificates on the collector's machine: Git for Windows' bash has openssl.
install(PROGRAMS ${CMAKE_SOURCE_DIR}/deploy/pki.sh DESTINATION ${_top_collector}/pki
        COMPONENT collector)
foreach(_c agent collector cli)
  install(FILES ${CMAKE_SOURCE_DIR}/docs/windows.md DESTINATION ${_top_${_c}}/doc COMPONENT ${_c})
endforeach()
# DLLs the .exe files need that Windows does not ship: none with the static dependency build;
# a shared build lists them here (build.sh refuses an .exe importing anything else).
set(PW_WIN_RUNTIME_DLLS "" CACHE STRING "Extra DLLs to pack next to the .exe files")
if(PW_WIN_RUNTIME_DLLS)
  foreach(_c agent collector cli)
    install(FILES ${PW_WIN_RUNTIME_DLLS} DESTINATION ${_top_${_c}}/bin COMPONENT ${_c})
  endforeach()
endif()

set(CPACK_PACKAGE_NAME "poolwatch")
set(CPACK_PACKAGE_VENDOR "poolwatch")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_SYSTEM_NAME "win64")
set(CPACK_GENERATOR "ZIP")
# Each zip's files sit in a directory named as the zip (the destinations above carry it).
set(CPACK_INCLUDE_TOPLEVEL_DIRECTORY OFF)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "poolwatch for Windows (kernel pool-tag leaks)")
set(CPACK_ARCHIVE_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL agent collector cli)
set(CPACK_ARCHIVE_AGENT_FILE_NAME "poolwatch-agent-${PROJECT_VERSION}-win64")
set(CPACK_ARCHIVE_COLLECTOR_FILE_NAME "poolwatch-collector-${PROJECT_VERSION}-win64")
set(CPACK_ARCHIVE_CLI_FILE_NAME "poolwatch-cli-${PROJECT_VERSION}-win64")
include(CPack)
