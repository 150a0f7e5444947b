#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The installed CMake package: no absolute path in any installed
# lib/cmake/ssq/*.cmake (dependencies are targets ssqConfig.cmake makes
# again: PkgConfig::SSQ_DEP_*, Threads::Threads - not this machine's
# /usr/lib/.../libibverbs.so), and find_package(ssq 0.1) gives ssq::ssq and
# ssq::ssq_static, both of which build a consumer that runs.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pkg_common.sh"

cmdir=$(find "$prefix" -path '*/cmake/ssq' -type d)
[ -f "$cmdir/ssqConfig.cmake" ] && [ -f "$cmdir/ssqTargets.cmake" ] ||
	{ bad "no ssqConfig.cmake / ssqTargets.cmake under $prefix"; pkg_done; }
# An absolute path: a '/' starting a word, not one after ${VAR} or a name.
abs=$(grep -nE '(^|[^A-Za-z0-9_.}$-])/[A-Za-z0-9_]' "$cmdir"/*.cmake || true)
for p in "$build" "$src" "$prefix" /usr/lib /usr/include; do
	abs+=$(grep -nF "$p" "$cmdir"/*.cmake || true)
done
if [ -z "$abs" ]; then
	ok "no absolute path in $(cd "$cmdir" && echo *.cmake)"
else
	bad "absolute paths in the installed CMake files:"
	echo "$abs"
fi
links=$(sed -n 's/.*INTERFACE_LINK_LIBRARIES "\(.*\)"/\1/p' "$cmdir/ssqTargets.cmake" | sort -u)
echo "     INTERFACE_LINK_LIBRARIES: $links"
[[ $links == *PkgConfig::SSQ_DEP_IBVERBS* ]] && ok "dependencies named as targets" ||
	bad "INTERFACE_LINK_LIBRARIES do not name PkgConfig::SSQ_DEP_IBVERBS"

for target in ssq::ssq ssq::ssq_static; do
	d=$work/cm-${target#ssq::}
	mkdir -p "$d"
	cp "$here/pkg_consumer.c" "$d/"
	cat >"$d/CMakeLists.txt" <<C
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(ssq 0.1 REQUIRED)
add_executable(consumer pkg_consumer.c)
target_compile_options(consumer PRIVATE -Wall -Wextra -Werror)
target_link_libraries(consumer PRIVATE $target)
C
	if cmake -S "$d" -B "$d/build" -DCMAKE_PREFIX_PATH="$prefix" \
		-DCMAKE_C_COMPILER="${CC:-cc}" -DCMAKE_C_FLAGS="${san[*]}" \
		-DCMAKE_EXE_LINKER_FLAGS="${san[*]}" >"$d/log" 2>&1 &&
		cmake --build "$d/build" >>"$d/log" 2>&1; then
		ok "find_package(ssq 0.1) consumer of $target built"
	else
		bad "find_package(ssq) consumer of $target:"
		cat "$d/log"
		continue
	fi
	# No LD_LIBRARY_PATH: CMake's build RPATH names the imported library.
	uses=$(ldd "$d/build/consumer" | awk '$1 ~ /^libssq\.so/ { print $3 }')
	if [ "$target" = ssq::ssq ]; then
		[[ $uses == "$libdir"/* ]] && ok "  links $uses" || bad "  $target consumer links '$uses'"
	else
		[ -z "$uses" ] && ok "  static: no libssq.so needed" || bad "  static consumer needs $uses"
	fi
	if "$d/build/consumer" | grep -q "RDMA_WRITE"; then
		ok "  runs: dumps an RDMA WRITE WQE"
	else
		bad "  $target consumer did not dump its WQE"
	fi
done

# A version the package does not have is refused.
d=$work/cm-v9
mkdir -p "$d"
printf 'cmake_minimum_required(VERSION 3.18)\nproject(v C)\nfind_package(ssq 9 REQUIRED)\n' \
	>"$d/CMakeLists.txt"
if cmake -S "$d" -B "$d/build" -DCMAKE_PREFIX_PATH="$prefix" >"$d/log" 2>&1; then
	bad "find_package(ssq 9) succeeded against $version"
else
	ok "find_package(ssq 9) refused (version $version)"
fi
pkg_done
