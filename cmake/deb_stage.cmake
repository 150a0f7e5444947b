# cpack's pre-build script for the Debian packages (cmake/deb.cmake): runs
# on each component's staged tree, after `cmake --install` into it and
# before dpkg-deb, and adds what Debian policy asks of every binary package
# and CPack does not make:
#  - /usr/share/doc/<package>/copyright (policy 12.5; lintian:
#    no-copyright-file), the project's LICENSE;
#  - /usr/share/doc/<package>/changelog.Debian.gz (policy 12.7; lintian:
#    debian-changelog-file-missing), cmake/deb/changelog;
#  - /usr/share/lintian/overrides/<package>: initial-upload-closes-no-bugs,
#    with the reason (cmake/deb/lintian-overrides);
#  - manual pages compressed with gzip -9n (policy 12.3; lintian:
#    uncompressed-manual-page), and a page that is only a `.so` link made a
#    symbolic link to its target's .gz (policy 12.1 prefers a link).
# -n: no name or time in the gzip header, so the packages are the same
# bytes from the same tree.
if(NOT CPACK_GENERATOR STREQUAL "DEB")
  return()
endif()
find_program(SSQ_GZIP gzip REQUIRED)
foreach(comp ${CPACK_COMPONENTS_ALL})
  set(root "${CPACK_TEMPORARY_DIRECTORY}/${comp}")
  if(NOT IS_DIRECTORY "${root}")
    message(FATAL_ERROR "deb_stage: no staged tree ${root}")
  endif()
  string(TOUPPER "${comp}" COMP)
  set(pkg "${CPACK_DEBIAN_${COMP}_PACKAGE_NAME}")
  set(doc "${root}${CPACK_PACKAGING_INSTALL_PREFIX}/share/doc/${pkg}")
  file(MAKE_DIRECTORY "${doc}")
  file(COPY_FILE "${CPACK_SSQ_LICENSE}" "${doc}/copyright")
  file(READ "${CPACK_SSQ_CHANGELOG}" log)
  string(REGEX MATCH "^ssq \\(([^)]*)\\)" _ "${log}")
  if(NOT CMAKE_MATCH_1 STREQUAL CPACK_SSQ_VERSION)
    message(FATAL_ERROR "deb_stage: ${CPACK_SSQ_CHANGELOG} starts at ${CMAKE_MATCH_1}, "
                        "the package is ${CPACK_SSQ_VERSION}: add its entry")
  endif()
  file(COPY_FILE "${CPACK_SSQ_CHANGELOG}" "${doc}/changelog.Debian")
  execute_process(COMMAND ${SSQ_GZIP} -9nf "${doc}/changelog.Debian" COMMAND_ERROR_IS_FATAL ANY)
  set(ovr "${root}${CPACK_PACKAGING_INSTALL_PREFIX}/share/lintian/overrides")
  file(MAKE_DIRECTORY "${ovr}")
  file(COPY_FILE "${CPACK_SSQ_OVERRIDES}" "${ovr}/${pkg}")

  file(GLOB_RECURSE pages "${root}/*/share/man/man*/*.[1-8]")
  set(links)
  foreach(page ${pages})
    file(STRINGS "${page}" first LIMIT_COUNT 1)
    if(first MATCHES "^\\.so (man[1-8]/[^ ]+)$")
      list(APPEND links "${page}|${CMAKE_MATCH_1}")
    else()
      execute_process(COMMAND ${SSQ_GZIP} -9nf "${page}" COMMAND_ERROR_IS_FATAL ANY)
    endif()
  endforeach()
  foreach(l ${links})
    string(REPLACE "|" ";" l "${l}")
    list(GET l 0 page)
    list(GET l 1 target)
    get_filename_component(dir "${page}" DIRECTORY)
    get_filename_component(tdir "${target}" DIRECTORY)
    get_filename_component(tname "${target}" NAME)
    get_filename_component(mandir "${dir}" DIRECTORY)
    if(NOT EXISTS "${mandir}/${target}.gz")
      message(FATAL_ERROR "deb_stage: ${page} is .so ${target}, not in this package")
    endif()
    file(REMOVE "${page}")
    get_filename_component(dname "${dir}" NAME)
    if(dname STREQUAL tdir)
      file(CREATE_LINK "${tname}.gz" "${page}.gz" SYMBOLIC)
    else()
      file(CREATE_LINK "../${tdir}/${tname}.gz" "${page}.gz" SYMBOLIC)
    endif()
  endforeach()
endforeach()
