# DebianPackages.cmake (-DPW_DEB_PACKAGES=ON): `cpack -G DEB` makes three packages,
#   poolwatch-agent      /usr/bin/poolwatch-agent, /etc/poolwatch/agent.conf (conffile),
#                        poolwatch-agent.service, poolwatch-agent(1)
#   poolwatch-collector  /usr/bin/poolwatch-collector, /etc/poolwatch/collector.conf
#                        (conffile: the example with the TLS files in /etc/poolwatch/pki and
#                        the tokens file /etc/poolwatch/tokens, cmake/deb_conffile.py),
#                        /usr/share/poolwatch/pki.sh (deploy/pki.sh; Recommends: openssl),
#                        poolwatch-collector.service, poolwatch-collector(1), the
#                        system user "poolwatch" (maintainer scripts in deploy/debian/)
#   poolwatch            the CLI, poolwatch(1)
# each with copyright (written from LICENSE by cmake/deb_copyright.py under the header
# paragraph of deploy/debian/copyright.in) and changelog. The man pages are written at build
# time by cmake/manpage.py from what the binaries print (--help, --print-example, `help COMMAND`);
# the conffiles are deploy/config/*.conf.example (generated from the option tables), the
# collector's with its TLS files and tokens file set (cmake/deb_conffile.py); the units
# are deploy/systemd/*.service with the binaries' installed path (cmake/SystemdUnits.cmake). Dependencies come from
# dpkg-shlibdeps. tests/deb/test_deb.sh builds them, checks them with lintian and installs
# them in a clean Debian 12 root.
foreach(_t poolwatch-agent poolwatch-collector poolwatch)
  if(NOT TARGET ${_t})
    message(FATAL_ERROR "PW_DEB_PACKAGES needs all three binaries (${_t} is not built)")
  endif()
endforeach()
find_package(Python3 REQUIRED COMPONENTS Interpreter)
find_program(PW_GZIP gzip REQUIRED)
if(NOT CMAKE_STRIP)
  message(FATAL_ERROR "PW_DEB_PACKAGES: no strip program (binutils)")
endif()
include(GNUInstallDirs)
set(_deb ${CMAKE_BINARY_DIR}/deb)
file(MAKE_DIRECTORY ${_deb})
# The project's own packages name the project; whoever builds packages for others (a
# distribution, a company's repository) puts its own name and address here:
# cmake --preset deb -DPW_DEB_MAINTAINER="Jane Admin <pkg@corp.example>" (README, "Running it
# for real"). The .invalid address (RFC 2606) cannot reach anyone by mistake.
set(PW_DEB_MAINTAINER "poolwatch team <packaging@poolwatch.invalid>" CACHE STRING
    "Maintainer field of the .deb packages (Name <address>)")
if(NOT PW_DEB_MAINTAINER MATCHES "^[^<>]+ <[^<>@ ]+@[^<>@ ]+>$")
  message(FATAL_ERROR "PW_DEB_MAINTAINER must read 'Name <user@host>', not '${PW_DEB_MAINTAINER}'")
endif()
# the copyright file, from LICENSE
add_custom_command(OUTPUT ${_deb}/copyright
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/cmake/deb_copyright.py
          ${CMAKE_SOURCE_DIR}/LICENSE ${CMAKE_SOURCE_DIR}/deploy/debian/copyright.in
          ${_deb}/copyright
  DEPENDS ${CMAKE_SOURCE_DIR}/LICENSE ${CMAKE_SOURCE_DIR}/deploy/debian/copyright.in
          ${CMAKE_SOURCE_DIR}/cmake/deb_copyright.py
  COMMENT "the packages' copyright file from LICENSE")
add_custom_target(deb-copyright ALL DEPENDS ${_deb}/copyright)
string(TIMESTAMP _date "%a, %d %b %Y %H:%M:%S +0000" UTC)

# component|binary|manpage.py mode|synopsis|description (lines of at most 80 characters, split at "^")
set(_pkgs
  "agent|poolwatch-agent|daemon|poolwatch agent: kernel pool tag and slab sampler|Samples per-tag kernel pool counters (Windows) or slab caches (Linux),^delta-encodes them into a durable spool and streams them to a poolwatch^collector over mutual TLS."
  "collector|poolwatch-collector|daemon|poolwatch collector: pool tag history, leak detection, API|Stores the fleet's pool tag history in SQLite, finds the leaking tag of^each host, warns before a pool runs out, and serves an HTTPS API, a^dashboard, /metrics and Prometheus remote write."
  "cli|poolwatch|cli|poolwatch command line client: remote poolmon, leaks, imports|Remote poolmon for any host of a poolwatch collector, fleet queries, leak^reports, and parse and import of saved poolmon captures.")
set(_comps "")
foreach(_row IN LISTS _pkgs)
  string(REPLACE "|" ";" _p "${_row}")
  list(GET _p 0 _c)
  list(GET _p 1 _bin)
  list(GET _p 2 _mode)
  list(GET _p 3 _sum)
  list(GET _p 4 _long)
  string(REPLACE "^" "\n " _long "${_long}")
  list(APPEND _comps ${_c})
  # the package name is the binary's, the CLI's "poolwatch"
  set(_pkg ${_bin})
  # the binary, stripped (the debug info stays in the build tree); the targets' own install
  # rules (component Unspecified) are left out of the packages
  add_custom_command(OUTPUT ${_deb}/bin/${_bin}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_deb}/bin
    COMMAND ${CMAKE_STRIP} --strip-unneeded -o ${_deb}/bin/${_bin} $<TARGET_FILE:${_bin}>
    DEPENDS ${_bin})
  add_custom_target(strip-${_bin} ALL DEPENDS ${_deb}/bin/${_bin})
  install(PROGRAMS ${_deb}/bin/${_bin} DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT ${_c})
  add_custom_command(OUTPUT ${_deb}/${_bin}.1.gz
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/cmake/manpage.py ${_mode}
            $<TARGET_FILE:${_bin}> ${_deb}/${_bin}.1
    COMMAND ${PW_GZIP} -n -9 -f ${_deb}/${_bin}.1
    DEPENDS ${_bin} ${CMAKE_SOURCE_DIR}/cmake/manpage.py
    COMMENT "man page of ${_bin} from its --help")
  add_custom_target(man-${_bin} ALL DEPENDS ${_deb}/${_bin}.1.gz)
  install(FILES ${_deb}/${_bin}.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT ${_c})
  file(WRITE ${_deb}/${_pkg}.changelog
       "${_pkg} (${PROJECT_VERSION}) unstable; urgency=medium\n\n"
       "  * poolwatch ${PROJECT_VERSION}, commit ${PW_GIT_COMMIT}.\n\n"
       " -- ${PW_DEB_MAINTAINER}  ${_date}\n")
  execute_process(COMMAND ${PW_GZIP} -n -9 -c ${_deb}/${_pkg}.changelog
                  OUTPUT_FILE ${_deb}/${_pkg}.changelog.gz)
  install(FILES ${_deb}/${_pkg}.changelog.gz DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${_pkg}
          RENAME changelog.gz COMPONENT ${_c})
  install(FILES ${_deb}/copyright
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${_pkg} COMPONENT ${_c})
  string(TOUPPER ${_c} _C)
  set(CPACK_DEBIAN_${_C}_PACKAGE_NAME ${_pkg})
  set(CPACK_DEBIAN_${_C}_FILE_NAME DEB-DEFAULT)
  set(CPACK_DEBIAN_${_C}_DESCRIPTION "${_sum}\n ${_long}")
  set(CPACK_DEBIAN_${_C}_PACKAGE_SECTION admin)
  if(NOT _c STREQUAL "cli")
    # the daemons: conffile, unit, maintainer scripts
    string(REPLACE "poolwatch-" "" _short ${_bin})
    # the conffile: the example, with the collector's files where the install steps put them
    # (README: pki.sh into /etc/poolwatch/pki, --new-token into /etc/poolwatch/tokens)
    set(_conf_sets "")
    if(_c STREQUAL "collector")
      set(_conf_sets agents.ca_file=/etc/poolwatch/pki/ca.pem
                     agents.cert_file=/etc/poolwatch/pki/collector.pem
                     agents.key_file=/etc/poolwatch/pki/collector.key
                     http.tokens_file=/etc/poolwatch/tokens
                     "note=Packaged: the certificates and key are those that /usr/share/poolwatch/pki.sh /etc/poolwatch/pki --collector-name NAME | makes (the key reaches the service by LoadCredential=), the tokens file gets its lines from | poolwatch-collector --new-token read NAME >> /etc/poolwatch/tokens (man poolwatch-collector).")
    endif()
    add_custom_command(OUTPUT ${_deb}/${_short}.conf
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/cmake/deb_conffile.py
              ${CMAKE_SOURCE_DIR}/deploy/config/${_short}.conf.example ${_deb}/${_short}.conf
              ${_conf_sets}
      DEPENDS ${CMAKE_SOURCE_DIR}/deploy/config/${_short}.conf.example
              ${CMAKE_SOURCE_DIR}/cmake/deb_conffile.py
      COMMENT "the package's ${_short}.conf" VERBATIM)
    add_custom_target(conffile-${_short} ALL DEPENDS ${_deb}/${_short}.conf)
    install(FILES ${_deb}/${_short}.conf DESTINATION /etc/poolwatch COMPONENT ${_c})
    file(WRITE ${_deb}/${_c}/conffiles "/etc/poolwatch/${_short}.conf\n")
    pw_systemd_unit_text(${_bin} _unit) # cmake/SystemdUnits.cmake
    if(_c STREQUAL "collector")
      # the package's system user (postinst); DynamicUser takes a static user when it exists
      string(REPLACE "DynamicUser=yes\n" "DynamicUser=yes\nUser=poolwatch\nGroup=poolwatch\n" _unit "${_unit}")
    endif()
    file(WRITE ${_deb}/${_bin}.service "${_unit}")
    install(FILES ${_deb}/${_bin}.service DESTINATION /lib/systemd/system COMPONENT ${_c})
    set(_extra ${_deb}/${_c}/conffiles)
    foreach(_s postinst prerm postrm)
      configure_file(${CMAKE_SOURCE_DIR}/deploy/debian/${_bin}.${_s} ${_deb}/${_c}/${_s} COPYONLY)
      list(APPEND _extra ${_deb}/${_c}/${_s})
    endforeach()
    set(CPACK_DEBIAN_${_C}_PACKAGE_CONTROL_EXTRA "${_extra}")
  endif()
endforeach()
set(CPACK_DEBIAN_COLLECTOR_PACKAGE_DEPENDS "passwd")
# deploy/pki.sh, for the collector's first CA and certificates (README's install steps); it
# runs the openssl command
install(PROGRAMS ${CMAKE_SOURCE_DIR}/deploy/pki.sh DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/poolwatch
        COMPONENT collector)
set(CPACK_DEBIAN_COLLECTOR_PACKAGE_RECOMMENDS "openssl")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME poolwatch)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR poolwatch)
set(CPACK_PACKAGE_CONTACT "${PW_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Windows kernel pool tag leak monitoring")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${_comps})
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
