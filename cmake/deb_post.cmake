# cpack's post-build script for the Debian packages (cmake/deb.cmake): the
# library package's ldconfig. CPack writes postinst and postrm scripts
# that run ldconfig for a package holding a shared library in /usr/lib;
# Debian runs ldconfig through libc-bin's trigger instead (policy 8.1.1;
# lintian: lacks-ldconfig-trigger, maintscript-calls-ldconfig). So each
# package with such scripts is unpacked, the scripts left out, a
# `triggers` file with `activate-noawait ldconfig` put in, and it is packed
# again, owned by root as dpkg-deb packs CPack's. The same package gets a
# `symbols` file (deb-symbols(5), policy 8.6.3; lintian:
# no-symbols-control-file): each name src/libssq.map exports, at its
# version node, since the first version, so dpkg-shlibdeps can tell which
# release a program needs by the calls it uses.
if(NOT CPACK_GENERATOR STREQUAL "DEB")
  return()
endif()
find_program(SSQ_DPKG_DEB dpkg-deb REQUIRED)
foreach(deb ${CPACK_PACKAGE_FILES})
  set(dir "${deb}.d")
  file(REMOVE_RECURSE "${dir}")
  execute_process(COMMAND ${SSQ_DPKG_DEB} -R "${deb}" "${dir}" COMMAND_ERROR_IS_FATAL ANY)
  if(NOT EXISTS "${dir}/DEBIAN/postinst")
    file(REMOVE_RECURSE "${dir}")
    continue()
  endif()
  foreach(script postinst postrm)
    file(STRINGS "${dir}/DEBIAN/${script}" lines)
    list(FILTER lines EXCLUDE REGEX "^(#!/bin/sh|set -e|if \\[ \"\\$1\" = \"(configure|remove)\" \\]; then|[ \t]*ldconfig|fi|)$")
    if(lines)
      message(FATAL_ERROR "deb_post: ${deb}'s ${script} does more than ldconfig: ${lines}")
    endif()
    file(REMOVE "${dir}/DEBIAN/${script}")
  endforeach()
  file(WRITE "${dir}/DEBIAN/triggers" "activate-noawait ldconfig\n")
  file(STRINGS "${dir}/DEBIAN/shlibs" shlibs)
  if(NOT shlibs MATCHES "^([^ ]+) ([0-9]+) ([^ ]+) ")
    message(FATAL_ERROR "deb_post: ${deb}'s shlibs: ${shlibs}")
  endif()
  set(syms "${CMAKE_MATCH_1}.so.${CMAKE_MATCH_2} ${CMAKE_MATCH_3} #MINVER#\n")
  string(APPEND syms "* Build-Depends-Package: ${CMAKE_MATCH_1}-dev\n")
  file(READ "${CPACK_SSQ_MAP}" map)
  string(REGEX REPLACE "/\\*([^*]|\\*[^/])*\\*/" "" map "${map}")
  string(REGEX MATCH "^[ \t\n]*([A-Za-z0-9_.]+)[ \t\n]*{[ \t\n]*global:([^}]*)local:" _ "${map}")
  set(node "${CMAKE_MATCH_1}")
  string(REGEX MATCHALL "[A-Za-z0-9_]+;" names "${CMAKE_MATCH_2}")
  if(NOT node OR NOT names)
    message(FATAL_ERROR "deb_post: no version node or names in ${CPACK_SSQ_MAP}")
  endif()
  string(APPEND syms " ${node}@${node} ${CPACK_SSQ_FIRST_VERSION}\n")
  foreach(n ${names})
    string(REPLACE ";" "" n "${n}")
    string(APPEND syms " ${n}@${node} ${CPACK_SSQ_FIRST_VERSION}\n")
  endforeach()
  file(WRITE "${dir}/DEBIAN/symbols" "${syms}")
  file(CHMOD "${dir}/DEBIAN/triggers" "${dir}/DEBIAN/symbols"
       PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  execute_process(COMMAND ${SSQ_DPKG_DEB} --root-owner-group -Zxz -b "${dir}" "${deb}"
                  OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  file(REMOVE_RECURSE "${dir}")
endforeach()
