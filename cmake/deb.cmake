# Debian packages, split as Debian splits a library (`cpack -G DEB` in the
# build tree; tests/test_pkg_deb.sh installs them, tests/test_pkg_lintian.sh
# checks them with lintian):
#   libssq0     the shared library, named for its SONAME libssq.so.0
#               (Debian policy 8.1), with shlibs and the ldconfig trigger
#   libssq-dev  headers, the libssq.so link, libssq.a, ssq.pc, the CMake
#               package, sections 3 and 7 (policy 8.4)
#   ssqd        the daemon, its systemd units, section 8
#   ssq-tools   the perftest-style tools and demos, section 1
# One install() component each (CMakeLists.txt). Each package's
# dependencies on system libraries come from dpkg-shlibdeps on its
# binaries, as a debian/rules build gets them; between the four, the
# components say. cmake/deb_stage.cmake adds what dpkg-deb alone leaves out
# and lintian asks for (the copyright and changelog, compressed man pages,
# the one override with its reason); cmake/deb_post.cmake trades CPack's
# ldconfig scripts for the ldconfig trigger.
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL libssq0 libssq-dev ssqd ssq-tools)
set(CPACK_PACKAGE_NAME ssq)
set(CPACK_PACKAGE_VENDOR "ssq")
# A Debian revision: the packaging of upstream 0.1.0 is 0.1.0-1, with its
# changelog.Debian (a version without one is a native package, whose
# upstream is Debian).
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_PACKAGE_CONTACT "ssq maintainers <ssq-maintainers@lists.ssq-project.org>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libssq0's shlibs (a binary linked against 0.1 needs >= 0.1) and the
# ldconfig trigger dpkg runs when it lands (lintian: no-shlibs,
# package-has-no-ldconfig-trigger... for a public library).
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# Debian ships binaries stripped (policy 10.1; lintian:
# unstripped-binary-or-object); the debug information is a -dbgsym's.
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/deb_stage.cmake)
set(CPACK_POST_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/deb_post.cmake)
# What deb_stage.cmake reads (a CPACK_ variable reaches cpack's scripts).
set(CPACK_SSQ_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_SSQ_CHANGELOG ${CMAKE_CURRENT_LIST_DIR}/deb/changelog)
set(CPACK_SSQ_OVERRIDES ${CMAKE_CURRENT_LIST_DIR}/deb/lintian-overrides)
set(CPACK_SSQ_MAP ${PROJECT_SOURCE_DIR}/src/libssq.map)
# The release that first exported SSQ_0.1's calls: a symbols file's
# minimal version for each (a new node's calls get the release adding it).
set(CPACK_SSQ_FIRST_VERSION 0.1.0)
set(CPACK_SSQ_VERSION ${PROJECT_VERSION}-1)

set(CPACK_DEBIAN_LIBSSQ0_PACKAGE_NAME libssq0)
set(CPACK_DEBIAN_LIBSSQ0_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIBSSQ0_DESCRIPTION "${PROJECT_DESCRIPTION} - library
ssqd owns one RC send queue per peer on an mlx5 device and shares it
among processes, which post into it without a lock or a system call.
.
This package holds the shared library libssq, which programs that post
through ssqd link.")
set(CPACK_DEBIAN_LIBSSQ0_PACKAGE_RECOMMENDS ssqd)

set(CPACK_DEBIAN_LIBSSQ-DEV_PACKAGE_NAME libssq-dev)
set(CPACK_DEBIAN_LIBSSQ-DEV_PACKAGE_SECTION libdevel)
# ssq.pc's Requires.private and the headers' #include <infiniband/mlx5dv.h>.
set(CPACK_DEBIAN_LIBSSQ-DEV_PACKAGE_DEPENDS "libibverbs-dev")
set(CPACK_DEBIAN_LIBSSQ-DEV_DESCRIPTION "${PROJECT_DESCRIPTION} - development files
ssqd owns one RC send queue per peer on an mlx5 device and shares it
among processes, which post into it without a lock or a system call.
.
This package holds what one builds against libssq: its headers (the
posting hot path is inline there), the static library, ssq.pc, the CMake
package and the manual pages of the API.")
set(CPACK_COMPONENT_LIBSSQ-DEV_DEPENDS libssq0)

set(CPACK_DEBIAN_SSQD_PACKAGE_NAME ssqd)
set(CPACK_DEBIAN_SSQD_PACKAGE_SECTION net)
set(CPACK_DEBIAN_SSQD_DESCRIPTION "${PROJECT_DESCRIPTION} - daemon
ssqd owns one RC send queue per peer on an mlx5 device and shares it
among processes, which post into it without a lock or a system call.
.
This package holds ssqd and its systemd service and socket units.")

set(CPACK_DEBIAN_SSQ-TOOLS_PACKAGE_NAME ssq-tools)
set(CPACK_DEBIAN_SSQ-TOOLS_PACKAGE_SECTION net)
set(CPACK_DEBIAN_SSQ-TOOLS_PACKAGE_RECOMMENDS ssqd)
set(CPACK_DEBIAN_SSQ-TOOLS_DESCRIPTION "${PROJECT_DESCRIPTION} - tools
ssqd owns one RC send queue per peer on an mlx5 device and shares it
among processes, which post into it without a lock or a system call.
.
This package holds the perftest-style benchmarks (ssq_write_bw,
ssq_read_lat and the others, taking perftest's flags) and the demos.")
include(CPack)
