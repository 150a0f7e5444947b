/* SPDX-License-Identifier: MIT */
/*
 * Arena on 4 KiB pages of an anonymous memfd: the fallback for machines
 * with no hugepages reserved (an unprivileged laptop, a CI container).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "shm/create/arena.h"

int shm_arena_create_memfd(struct shm_arena *a, size_t len, const char *tag, char *why,
                           size_t whylen)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char name[64];
	int fd, err;
	void *p;

	memset(a, 0, sizeof(*a));
	len = (len + page - 1) & ~(page - 1);
	snprintf(name, sizeof(name), "ssq-arena-%s", tag ? tag : "anon");
	fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0) {
		err = errno;
		snprintf(why, whylen, "memfd_create: %s", strerror(err));
		return -err;
	}
	if (ftruncate(fd, (off_t)len) < 0) {
		err = errno;
		snprintf(why, whylen, "ftruncate of the %zu-byte arena: %s", len,
		         strerror(err));
		close(fd);
		return -err;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = errno;
		snprintf(why, whylen, "mmap of the %zu-byte arena: %s", len,
		         strerror(err));
		close(fd);
		return -err;
	}
	a->base = p;
	a->len = len;
	a->fd = fd;
	a->page_size = page;
	return 0;
}
