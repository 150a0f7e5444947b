#!/usr/bin/env bash
# Install what ssq needs to build, test, benchmark and demo, from Debian 12's
# packages. Idempotent: installs only what is missing and says what that is.
# Runs apt-get as root, through sudo otherwise.
set -euo pipefail

pkgs=(
	cmake make pkg-config gcc g++ clang          # build; clang for libFuzzer
	libibverbs-dev ibverbs-providers              # libibverbs, libmlx5, mlx5dv.h
	libdpdk-dev                                   # DPDK EAL (hugepages only)
	libsystemd-dev                                # ssqd: socket activation, sd_notify
	libssl-dev                                    # ssqd: libcrypto's HMAC-SHA256 (--peer-key)
	systemd                                       # systemd-analyze verify, systemd-socket-activate
	man-db groff-base                             # man -l / groff checks of the man pages
	python3                                       # the socket-activation test's helpers
	strace                                        # ctrl_socket_ready holds ssqd's listen() back
	libbenchmark-dev                              # Google Benchmark (ssq_micro)
	valgrind                                      # callgrind instruction counts
	spin                                          # Promela model checking
	gnuplot-nox                                   # benchmark plots
	gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu libc6-dev-arm64-cross
	clang-format                                  # the repo's .clang-format
	lintian                                       # the split .debs checked as Debian checks them
)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#pkgs[@]} packages already installed"
	exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
	sudo=()
elif command -v sudo >/dev/null; then
	sudo=(sudo)
else
	echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q >/dev/null
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
