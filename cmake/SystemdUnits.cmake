# SystemdUnits.cmake: the systemd units of deploy/systemd/ with ExecStart naming the binaries
# where this build installs them (the sources name /usr/local/bin/, the default prefix's).
#   pw_systemd_unit_text(BIN OUTVAR)   deploy/systemd/BIN.service with
#                                      ${CMAKE_INSTALL_FULL_BINDIR}/ for /usr/local/bin/
#   pw_install_systemd_unit(BIN)       that unit installed by `cmake --install` (the binaries'
#                                      component) into <prefix>/lib/systemd/system: systemd
#                                      reads /usr/local/lib/systemd/system (the default prefix)
#                                      and /usr/lib/systemd/system; another prefix needs a link
#                                      from /etc/systemd/system (`systemctl link`)
# The Debian packages (DebianPackages.cmake) take the text and add their own lines.
include(GNUInstallDirs)

function(pw_systemd_unit_text bin outvar)
  set(_src ${PROJECT_SOURCE_DIR}/deploy/systemd/${bin}.service)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_src})
  file(READ ${_src} _unit)
  string(REPLACE "/usr/local/bin/" "${CMAKE_INSTALL_FULL_BINDIR}/" _unit "${_unit}")
  set(${outvar} "${_unit}" PARENT_SCOPE)
endfunction()

function(pw_install_systemd_unit bin)
  pw_systemd_unit_text(${bin} _unit)
  file(CONFIGURE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/${bin}.service CONTENT "${_unit}" @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${bin}.service DESTINATION lib/systemd/system)
endfunction()
