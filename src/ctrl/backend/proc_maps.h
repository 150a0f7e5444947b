/* SPDX-License-Identifier: MIT */
/*
 * What a client's memory is, from /proc/PID/maps: whether the emulated
 * device may reach a range of it through the client's /proc/PID/mem.
 */
#ifndef SSQ_CTRL_BACKEND_PROC_MAPS_H
#define SSQ_CTRL_BACKEND_PROC_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * ssqd_proc_range_check - is [@addr, @addr + @len) of process @pid mapped
 * throughout, readable, writable too when @writable, and memory whose
 * pages are there without I/O (anonymous, shared memory, memfd, hugetlbfs,
 * or the private copies of a private file mapping's pages, written once)?
 * Returns 0, -EFAULT (a gap, or a page without the access asked: what
 * ibv_reg_mr answers when it cannot pin), -EOPNOTSUPP (a page of a file on
 * a filesystem: reaching it could wait on I/O, or on another process, with
 * the device stopped), -EACCES (the maps cannot be read); @why says which
 * page and why.
 */
int ssqd_proc_range_check(pid_t pid, uint64_t addr, uint64_t len, int writable, char *why,
                          size_t whylen);

#endif /* SSQ_CTRL_BACKEND_PROC_MAPS_H */
