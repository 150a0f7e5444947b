/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the client protocol decoder, fed any bytes a client or a
 * daemon could send. It must return 0 or an error and never read outside the
 * input; on success every string it hands on is NUL-terminated and every
 * count within its array.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ctrl/proto/msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_msg m;
	char why[200];
	uint32_t i;

	if (proto_msg_decode(data, size, &m, why, sizeof(why)) != 0) {
		if (!memchr(why, 0, sizeof(why)))
			abort();
		return 0;
	}
	switch (m.hdr.type) {
	case SSQ_MSG_ATTACH:
		if (strnlen(m.u.attach.name, SSQ_NAME_MAX) == SSQ_NAME_MAX)
			abort();
		break;
	case SSQ_MSG_LIST | SSQ_MSG_REPLY:
		if (m.u.list_reply.nqueues > SSQ_MAX_QUEUES)
			abort();
		for (i = 0; i < m.u.list_reply.nqueues; i++)
			if (strnlen(m.u.list_reply.queues[i].name, SSQ_NAME_MAX) ==
			    SSQ_NAME_MAX)
				abort();
		break;
	case SSQ_MSG_ALLOC:
		if (!m.u.alloc.len || (m.u.alloc.align & (m.u.alloc.align - 1)))
			abort();
		break;
	case SSQ_MSG_ERROR:
		if (m.u.error.err >= 0)
			abort();
		break;
	default:
		break;
	}
	return 0;
}
