/* SPDX-License-Identifier: MIT */
/*
 * Remote descriptors packed for the wire and checked on the way back in
 * (<ssq/desc.h>). Layout of the SSQ_DESC_PACKED_SIZE bytes, little-endian:
 *   0  magic "SSQd"      4  u16 version   6  u16 size (64)
 *   8  u64 remote_addr  16  u64 length   24  u32 rkey   28  u32 reserved 0
 *  32  owner[24], NUL-padded              56  u32 reserved 0
 *  60  u32 checksum: FNV-1a over bytes 0..59
 * Through wire_bytes.h's little-endian helpers, so it reads the same on any
 * host.
 */
#include <errno.h>
#include <string.h>
#include <ssq/desc.h>
#include "wire_bytes.h"

#define DESC_MAGIC   0x64515353u /* "SSQd" read as a little-endian u32 */
#define OFF_VERSION  4
#define OFF_SIZE     6
#define OFF_ADDR     8
#define OFF_LENGTH   16
#define OFF_RKEY     24
#define OFF_RESV     28
#define OFF_OWNER    32
#define OFF_RESV2    56
#define OFF_CHECKSUM 60

_Static_assert(OFF_OWNER + SSQ_DESC_OWNER_MAX == OFF_RESV2, "owner fits");
_Static_assert(OFF_CHECKSUM + 4 == SSQ_DESC_PACKED_SIZE, "checksum ends it");

/* FNV-1a (32-bit): catches a damaged or spliced descriptor; not a MAC. */
static uint32_t fnv1a(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ *p++) * 16777619u;
	return h;
}

int ssq_desc_pack(const struct ssq_desc *d, void *buf, size_t len)
{
	uint8_t *b = buf;

	if (!d || !buf || !memchr(d->owner, '\0', SSQ_DESC_OWNER_MAX))
		return -EINVAL;
	if (len < SSQ_DESC_PACKED_SIZE)
		return -ENOSPC;
	memset(b, 0, SSQ_DESC_PACKED_SIZE);
	wb_put_le32(b, DESC_MAGIC);
	wb_put_le16(b + OFF_VERSION, SSQ_DESC_VERSION);
	wb_put_le16(b + OFF_SIZE, SSQ_DESC_PACKED_SIZE);
	wb_put_le64(b + OFF_ADDR, d->remote_addr);
	wb_put_le64(b + OFF_LENGTH, d->length);
	wb_put_le32(b + OFF_RKEY, d->rkey);
	memcpy(b + OFF_OWNER, d->owner, strlen(d->owner));
	wb_put_le32(b + OFF_CHECKSUM, fnv1a(b, OFF_CHECKSUM));
	return (int)SSQ_DESC_PACKED_SIZE;
}

int ssq_desc_unpack(const void *buf, size_t len, const char *from, struct ssq_desc *out)
{
	const uint8_t *b = buf;

	if (!buf || !out)
		return -EINVAL;
	/* Magic and version first: they say how to read the rest. */
	if (len < OFF_SIZE + 2)
		return -EMSGSIZE;
	if (wb_get_le32(b) != DESC_MAGIC)
		return -EBADMSG;
	if (wb_get_le16(b + OFF_VERSION) != SSQ_DESC_VERSION)
		return -EPROTONOSUPPORT;
	if (wb_get_le16(b + OFF_SIZE) != SSQ_DESC_PACKED_SIZE)
		return -EBADMSG;
	if (len < SSQ_DESC_PACKED_SIZE)
		return -EMSGSIZE;
	if (wb_get_le32(b + OFF_CHECKSUM) != fnv1a(b, OFF_CHECKSUM) ||
	    wb_get_le32(b + OFF_RESV) || wb_get_le32(b + OFF_RESV2) ||
	    !memchr(b + OFF_OWNER, '\0', SSQ_DESC_OWNER_MAX))
		return -EBADMSG;
	if (from && strncmp((const char *)b + OFF_OWNER, from, SSQ_DESC_OWNER_MAX))
		return -EXDEV;
	memset(out, 0, sizeof(*out));
	out->remote_addr = wb_get_le64(b + OFF_ADDR);
	out->length = wb_get_le64(b + OFF_LENGTH);
	out->rkey = wb_get_le32(b + OFF_RKEY);
	memcpy(out->owner, b + OFF_OWNER, SSQ_DESC_OWNER_MAX);
	return 0;
}
