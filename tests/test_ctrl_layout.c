/* SPDX-License-Identifier: MIT */
/*
 * A client maps an arena only after its layout header checks out: magic,
 * version, struct sizes, the mapped length, and every queue's offsets
 * inside the arena. Each mismatch is refused with a sentence naming it,
 * and nothing stays mapped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <ssq/queue.h>
#include "dv/ctl.h"
#include "shm/create/arena.h"
#include "shm/map/arena_map.h"
#include "shm/layout.h"
#include "helpers.h"

#define LEN (4u << 20)

static int fd;
static struct shm_arena_header *h;

static void good_header(void)
{
	memset(h, 0, sizeof(*h));
	h->magic = SSQ_LAYOUT_MAGIC;
	h->version = SSQ_LAYOUT_VERSION;
	h->header_size = sizeof(*h);
	h->queue_layout_size = sizeof(struct shm_queue_layout);
	h->nqueues = 1;
	h->arena_len = LEN;
	h->data_off = 2u << 20;
	h->data_len = 2u << 20;
	strcpy(h->queues[0].name, "q0");
	h->queues[0].state = SSQ_QUEUE_READY;
	h->queues[0].sq_wqe_cnt = 64;
	h->queues[0].cqe_cnt = 64;
	h->queues[0].sq_off = 8192;
	h->queues[0].cq_off = 16384;
	h->queues[0].qp_dbrec_off = 32768;
	h->queues[0].cq_dbrec_off = 32832;
	h->queues[0].ctl_off = 65536;
	h->queues[0].ctl_len = ssq_ctl_size(64);
	h->queues[0].recv_depth = 8;
	h->queues[0].recv_slots = 16;
	h->queues[0].recv_size = 4096;
	h->queues[0].recv_buf_off = (2u << 20) + 65536;
	h->queues[0].recv_log_off = 131072;
}

static void expect(const char *needle, const char *what)
{
	char why[256] = "";
	void *p = shm_arena_map(fd, 0, LEN, why, sizeof(why));

	CHECK(p == NULL, "%s: mapped", what);
	CHECK(strstr(why, needle) != NULL, "%s: \"%s\" lacks \"%s\"", what, why, needle);
	if (p)
		munmap(p, LEN);
	good_header();
}

int main(void)
{
	char why[256];
	void *p;

	fd = memfd_create("layout-test", 0);
	if (fd < 0 || ftruncate(fd, LEN))
		SKIP("memfd_create failed");
	h = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	good_header();
	p = shm_arena_map(fd, 0, LEN, why, sizeof(why));
	CHECK(p != NULL, "a good arena refused: %s", why);
	if (p)
		munmap(p, LEN);

	h->magic = 0x1234;
	expect("not an ssq arena", "bad magic");
	h->version = SSQ_LAYOUT_VERSION + 1;
	expect("layout version", "other version");
	h->queue_layout_size += 8;
	expect("layout version", "other queue struct size");
	h->arena_len = LEN / 2;
	expect("were mapped", "length mismatch");
	h->nqueues = SSQ_MAX_QUEUES + 1;
	expect("out of bounds", "too many queues");
	h->data_len = LEN;
	expect("out of bounds", "data arena past the end");
	h->queues[0].sq_off = LEN - 64;
	expect("queue 0", "SQ past the end");
	h->queues[0].cqe_cnt = 48;
	expect("queue 0", "CQ size not a power of two");
	h->queues[0].ctl_len = 64;
	expect("queue 0", "control block too small");
	h->queues[0].ctl_off = 65537;
	expect("queue 0", "misaligned control block");
	memset(h->queues[0].name, 'x', sizeof(h->queues[0].name));
	expect("queue 0", "unterminated name");
	h->queues[0].recv_depth = 6;
	h->queues[0].recv_slots = 12;
	expect("receive pool", "receive depth not a power of two");
	h->queues[0].recv_slots = 8;
	expect("receive pool", "slots not twice the depth");
	h->queues[0].recv_size = 100;
	expect("receive pool", "receive buffer size not a multiple of 64");
	h->queues[0].recv_buf_off = 65536;
	expect("receive pool", "receive buffers outside the data arena");
	h->queues[0].recv_buf_off = LEN - 4096;
	expect("receive pool", "receive buffers past the end");
	h->queues[0].recv_log_off = LEN - 64;
	expect("receive pool", "receive log past the end");
	h->queues[0].recv_log_off = 131072 + 8;
	expect("receive pool", "misaligned receive log");
	h->queues[0].recv_depth = 0;
	expect("receive pool", "fields of a pool that is off");
	memset(&h->queues[0].recv_depth, 0, 32);
	p = shm_arena_map(fd, 0, LEN, why, sizeof(why));
	CHECK(p != NULL, "a queue without a receive pool refused: %s", why);
	if (p)
		munmap(p, LEN);
	good_header();
	return test_exit("ctrl_layout");
}
