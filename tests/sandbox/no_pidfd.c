/* SPDX-License-Identifier: MIT */
/*
 * no_pidfd PROGRAM [ARG...]: run PROGRAM as a kernel or sandbox without
 * pidfds would - before Linux 5.3 (no pidfd_open), or under a seccomp
 * profile that refuses them (Docker's default before 20.10, gVisor, some
 * CI sandboxes):
 *  - pidfd_open, pidfd_send_signal and pidfd_getfd fail with ENOSYS, as
 *    an unknown system call does (the sandboxes answer so, or EPERM);
 *  - getsockopt(SOL_SOCKET, SO_PEERPIDFD) fails with ENOPROTOOPT, as
 *    before Linux 6.5 (sk_getsockopt's default case, net/core/sock.c).
 * A seccomp filter (Documentation/userspace-api/seccomp_filter.rst) after
 * PR_SET_NO_NEW_PRIVS, so no privilege is needed; it is inherited across
 * fork and exec. A system call of another architecture (or x86's x32 ABI)
 * kills the process: the numbers checked are this one's only.
 * For the tests (tests/CMakeLists.txt, the <name>_nopidfd runs), never
 * installed; exits 127 if the filter cannot be had or does not work.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#if defined(__x86_64__)
#define ARCH_HERE AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH_HERE AUDIT_ARCH_AARCH64
#else
#error "no_pidfd: only x86_64 and aarch64 are known"
#endif

/* include/uapi/asm-generic/unistd.h: the same numbers on every arch. */
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#define SO_PEERPIDFD_NR 77 /* include/uapi/asm-generic/socket.h */
#define X32_BIT         0x40000000u

#define LOAD(off)    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define RET(v)       BPF_STMT(BPF_RET | BPF_K, (v))
#define JEQ(k, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define JGE(k, t, f) BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (k), (t), (f))
#define FAIL(e)      RET(SECCOMP_RET_ERRNO | ((e)&SECCOMP_RET_DATA))
/* The low 32 bits of argument @i: the kernel reads level and optname as int. */
#define ARG_LO(i) offsetof(struct seccomp_data, args[i])

int main(int argc, char **argv)
{
	struct sock_filter f[] = {
		LOAD(offsetof(struct seccomp_data, arch)),
		JEQ(ARCH_HERE, 1, 0),
		RET(SECCOMP_RET_KILL_PROCESS),
		LOAD(offsetof(struct seccomp_data, nr)),
		JGE(X32_BIT, 0, 1),
		RET(SECCOMP_RET_KILL_PROCESS),
		JEQ(SYS_pidfd_open, 3, 0),
		JEQ(SYS_pidfd_send_signal, 2, 0),
		JEQ(SYS_pidfd_getfd, 1, 0),
		JEQ(SYS_getsockopt, 1, 6),
		FAIL(ENOSYS),
		LOAD(ARG_LO(1)),
		JEQ(SOL_SOCKET, 0, 3),
		LOAD(ARG_LO(2)),
		JEQ(SO_PEERPIDFD_NR, 0, 1),
		FAIL(ENOPROTOOPT),
		RET(SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (argc < 2) {
		fprintf(stderr, "usage: %s PROGRAM [ARG...]\n", argv[0]);
		return 2;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		fprintf(stderr, "no_pidfd: cannot install the seccomp filter: %s\n",
		        strerror(errno));
		return 127;
	}
	/* Fail closed: a filter that lets pidfd_open through tests nothing. */
	if (syscall(SYS_pidfd_open, getpid(), 0) >= 0 || errno != ENOSYS) {
		fprintf(stderr, "no_pidfd: pidfd_open not refused with ENOSYS (%s)\n",
		        strerror(errno));
		return 127;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "no_pidfd: exec %s: %s\n", argv[1], strerror(errno));
	return 127;
}
