/* SPDX-License-Identifier: MIT */
/*
 * Who holds 2 MiB hugepages, for the message when an arena cannot have
 * them: clients of an ssqd that died keep its arena mapped, and with it the
 * pages, until they exit; a restart with --hugepages=required then fails,
 * and the message should name them.
 */
#ifndef SSQ_SHM_CREATE_HUGEPAGE_HOLDERS_H
#define SSQ_SHM_CREATE_HUGEPAGE_HOLDERS_H

#include <stddef.h>

/*
 * Write "pid 123 (name), pid 456 (name)" into @out for up to 8 other
 * processes that map shared 2 MiB pages (from /proc/PID/smaps), or "" when
 * none is found or /proc cannot be read. Returns how many were found.
 */
int shm_hugepage_holders(char *out, size_t len);

#endif /* SSQ_SHM_CREATE_HUGEPAGE_HOLDERS_H */
