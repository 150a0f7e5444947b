#!/usr/bin/env bash
# The barriers of ssq/barrier.h are the instructions rdma-core uses, in the
# right places, on x86-64 (native) and aarch64 (cross compiler): compile
# tests/barrier_probe.c for each and read the barrier instructions of each
# fast-path sequence back from the object code, in order.
set -euo pipefail
src=${SSQ_SOURCE_DIR:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

# barriers OBJDUMP OBJ FUNC: the barrier mnemonics in FUNC, in order, one line.
barriers() {
	"$1" -d --no-show-raw-insn "$2" |
		awk -v f="<$3>:" '$2 == f {on = 1; next} on && /^$/ {exit} on' |
		grep -oE '(sfence|lfence|mfence|dmb[[:space:]]+[a-z]+|dsb[[:space:]]+[a-z]+)' |
		sed 's/[[:space:]]\+/ /' | paste -sd, - || true
}

expect() { # ARCH FUNC GOT WANT
	if [ "$3" = "$4" ]; then
		echo "ok   $1 $2: $3"
	else
		echo "FAIL $1 $2: got '$3', want '$4'"
		fail=1
	fi
}

cc -O2 -c -I"$src/include" "$src/tests/barrier_probe.c" -o "$work/x86.o"
expect x86-64 probe_ring_db "$(barriers objdump "$work/x86.o" probe_ring_db)" "sfence,sfence"
# ring_bf holds two sequences: the 8-byte fallback, then the BlueFlame copy.
expect x86-64 probe_ring_bf "$(barriers objdump "$work/x86.o" probe_ring_bf)" "sfence,sfence,sfence,sfence"
expect x86-64 probe_cq_peek "$(barriers objdump "$work/x86.o" probe_cq_peek)" "lfence"
expect x86-64 probe_rq_ring "$(barriers objdump "$work/x86.o" probe_rq_ring)" ""
expect x86-64 probe_publish "$(barriers objdump "$work/x86.o" probe_publish)" ""

if ! command -v aarch64-linux-gnu-gcc >/dev/null; then
	echo "FAIL: aarch64-linux-gnu-gcc missing (scripts/install-deps.sh installs gcc-aarch64-linux-gnu)"
	exit 1
fi
# rdma-core's headers are architecture-independent; give the cross compiler
# only them, so nothing else of the host's /usr/include leaks in.
mkdir -p "$work/inc"
cp -r /usr/include/infiniband "$work/inc/"
aarch64-linux-gnu-gcc -O2 -c -I"$src/include" -I"$work/inc" \
	"$src/tests/barrier_probe.c" -o "$work/a64.o"
od=aarch64-linux-gnu-objdump
expect aarch64 probe_ring_db "$(barriers $od "$work/a64.o" probe_ring_db)" "dmb oshst,dsb st,dsb st"
expect aarch64 probe_ring_bf "$(barriers $od "$work/a64.o" probe_ring_bf)" \
	"dmb oshst,dsb st,dsb st,dmb oshst,dsb st,dsb st"
expect aarch64 probe_cq_peek "$(barriers $od "$work/a64.o" probe_cq_peek)" "dmb oshld"
expect aarch64 probe_rq_ring "$(barriers $od "$work/a64.o" probe_rq_ring)" "dmb oshst"
# A producer's WQE stores are ordered for the device before its publish word
# by its own barrier: the CPU that rings may be another one, and its barrier
# would cover our stores only through cumulativity.
expect aarch64 probe_publish "$(barriers $od "$work/a64.o" probe_publish)" "dmb oshst"
exit $fail
