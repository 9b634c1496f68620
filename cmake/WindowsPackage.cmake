# The Windows agent package (deploy/windows/build.sh runs cpack -G ZIP): poolwatch-agent.exe in
# bin/, the example configuration, and install-agent.ps1 at the top. Only the agent's install
# rules exist in the Windows build (collector and CLI are not built), so the zip holds just this.
# The example configuration with the Windows defaults (source win, spool under %ProgramData%):
# deploy/windows/build.sh writes it with `poolwatch-agent.exe --print-example` under Wine.
install(FILES ${CMAKE_BINARY_DIR}/agent.conf.example DESTINATION config)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/windows/install-agent.ps1 DESTINATION .)
install(FILES ${CMAKE_SOURCE_DIR}/docs/windows.md DESTINATION doc)
# DLLs the .exe needs that Windows does not ship: none with the static dependency build;
# a shared build lists them here (build.sh refuses an .exe importing anything else).
set(PW_WIN_RUNTIME_DLLS "" CACHE STRING "Extra DLLs to pack next to poolwatch-agent.exe")
if(PW_WIN_RUNTIME_DLLS)
  install(FILES ${PW_WIN_RUNTIME_DLLS} DESTINATION bin)
endif()

set(CPACK_PACKAGE_NAME "poolwatch-agent")
set(CPACK_PACKAGE_VENDOR "poolwatch")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_SYSTEM_NAME "win64")
set(CPACK_GENERATOR "ZIP")
set(CPACK_INCLUDE_TOPLEVEL_DIRECTORY ON)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "poolwatch agent for Windows (kernel pool tags)")
include(CPack)
