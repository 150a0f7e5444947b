/* SPDX-License-Identifier: MIT */
/*
 * ssq/desc.h - a remote descriptor (where a peer's WQEs reach a buffer or a
 * registration: remote_addr, rkey, length, and whose it is) in a packed,
 * versioned, endian-safe form to send to a peer by any means (TCP, a file,
 * a SEND), as UCX's ucp_rkey_pack / ucp_ep_rkey_unpack do, instead of
 * writing "remote_addr rkey" by hand as rc_pingpong does.
 *
 *	struct ssq_desc d = { .remote_addr = b.remote_addr, .rkey = b.rkey,
 *			      .length = b.len, .owner = "bob" };
 *	uint8_t wire[SSQ_DESC_PACKED_SIZE];
 *	ssq_desc_pack(&d, wire, sizeof(wire));          // bob's side: send wire
 *	ssq_desc_unpack(wire, n, "bob", &d);            // alice's: checks it
 *
 * The packed form is SSQ_DESC_PACKED_SIZE bytes, every field little-endian
 * whatever the host's order: magic "SSQd", version, size, the fields, the
 * owner's name, a checksum. Unpacking checks each of them, and that the
 * descriptor belongs to the peer the caller expects it from, before it
 * gives out an address and a key.
 *
 * The descriptor of a buffer or registration a peer may reach comes from
 * ssq_buf_grant / ssq_mem_grant (<ssq/client.h>): with peers, nothing else
 * reaches a client's memory. ssq_desc_revoke takes it back.
 *
 * Both calls touch only their arguments: any thread, no ssqd needed.
 * Errors: a count or 0, or a negative errno; nothing sets errno.
 */
#ifndef SSQ_DESC_H
#define SSQ_DESC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SSQ_DESC_PACKED_SIZE 64u /* bytes ssq_desc_pack writes */
#define SSQ_DESC_VERSION     1u  /* the packed form this library writes and reads */
#define SSQ_DESC_OWNER_MAX   24u /* bytes of owner, NUL included (ssqd --name's limit) */

/* A remote descriptor, unpacked (host order). */
struct ssq_desc {
	uint64_t
	    remote_addr;   /* what a peer's WQEs carry as raddr (ssq_buf.remote_addr) */
	uint64_t length;   /* bytes reachable from remote_addr */
	uint32_t rkey;     /* ssq_buf.rkey, or a registration's */
	uint32_t reserved; /* 0 */
	/*
	 * Whose memory it is: the owning host's ssqd --name ("bob") in a
	 * cluster, else any name the two sides agree on; "" for none.
	 */
	char owner[SSQ_DESC_OWNER_MAX];
};

/*
 * ssq_desc_pack - write @d's packed form into @buf (@len bytes at least
 * SSQ_DESC_PACKED_SIZE). Returns SSQ_DESC_PACKED_SIZE, -ENOSPC (@len too
 * small: nothing written), or -EINVAL (@d or @buf NULL, or @d->owner not
 * NUL-terminated within SSQ_DESC_OWNER_MAX).
 */
int ssq_desc_pack(const struct ssq_desc *d, void *buf, size_t len);

/*
 * ssq_desc_unpack - check the @len bytes at @buf, as received, and fill
 * *@out from them. @from: the owner the caller expects (the peer it came
 * from, "bob"), or NULL to take any owner (then check out->owner yourself).
 * Returns 0, or (*@out untouched):
 *   -EMSGSIZE         @len shorter than the descriptor: truncated;
 *   -EBADMSG          not a descriptor (magic), or damaged (checksum, a
 *                     size or reserved field out of place);
 *   -EPROTONOSUPPORT  another version of the packed form;
 *   -EXDEV            it belongs to another owner than @from;
 *   -EINVAL           @buf or @out NULL.
 */
int ssq_desc_unpack(const void *buf, size_t len, const char *from, struct ssq_desc *out);

#ifdef __cplusplus
}
#endif

#endif /* SSQ_DESC_H */
