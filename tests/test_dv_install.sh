#!/usr/bin/env bash
# Install into a scratch prefix and build a consumer two ways: with
# pkg-config (ssq.pc) and with CMake's find_package(ssq). The consumer builds
# a WQE through the installed headers and links the installed library.
set -euo pipefail
build=${SSQ_BINARY_DIR:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
# A sanitized libssq needs sanitized consumers.
san=()
if grep -q '^SSQ_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then
	san=(-fsanitize=address,undefined)
fi

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(find "$prefix" -name ssq.pc -printf '%h\n' | head -n1)
[ -n "$libdir" ] || { echo "FAIL: ssq.pc not installed"; exit 1; }
# ssq.pc carries the build's configured prefix; point it at the scratch one.
sed -i "s|^prefix=.*|prefix=$prefix|" "$libdir/ssq.pc"

cat >"$work/consumer.c" <<'C'
#include <ssq/ssq.h>
#include <stdio.h>
int main(void)
{
	static unsigned char ring[4 * 64] __attribute__((aligned(64)));
	static __be32 dbrec[2];
	struct mlx5dv_qp dv = { 0 };
	struct ssq_sq sq;
	dv.dbrec = dbrec; dv.sq.buf = ring; dv.sq.wqe_cnt = 4; dv.sq.stride = 64;
	if (ssq_sq_init(&sq, &dv, 5, 0, 1))
		return 1;
	if (ssq_prep_rdma_write(&sq, 0, 0x1000, 1, 8, 0x2000, 2, SSQ_WQE_SIGNALED) != 1)
		return 1;
	return ssq_wqe_dump(stdout, &sq, 0) == 1 ? 0 : 1;
}
C
PKG_CONFIG_PATH=$libdir cc -Wall -Werror "${san[@]}" "$work/consumer.c" -o "$work/pc-consumer" \
	$(PKG_CONFIG_PATH=$libdir pkg-config --cflags --libs ssq)
LD_LIBRARY_PATH=$(dirname "$libdir") "$work/pc-consumer" | grep -q "RDMA_WRITE" ||
	{ echo "FAIL: pkg-config consumer"; exit 1; }
echo "ok   pkg-config consumer"

mkdir -p "$work/cm"
cp "$work/consumer.c" "$work/cm/"
cat >"$work/cm/CMakeLists.txt" <<'C'
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(ssq REQUIRED)
add_executable(consumer consumer.c)
target_link_libraries(consumer PRIVATE ssq::ssq_static)
C
cmake -S "$work/cm" -B "$work/cm/build" -DCMAKE_PREFIX_PATH="$prefix" \
	-DCMAKE_C_FLAGS="${san[*]}" -DCMAKE_EXE_LINKER_FLAGS="${san[*]}" >/dev/null
cmake --build "$work/cm/build" >/dev/null
"$work/cm/build/consumer" | grep -q "RDMA_WRITE" || { echo "FAIL: find_package consumer"; exit 1; }
echo "ok   find_package(ssq) consumer"
