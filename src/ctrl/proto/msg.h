/* SPDX-License-Identifier: MIT */
/*
 * The client protocol between libssq and ssqd, over a SOCK_SEQPACKET unix
 * socket (one datagram is one message, so no framing to get wrong).
 *
 * Every message: struct proto_msg_hdr, then exactly the payload its type
 * defines (sizes fixed, so a decoder checks one length). Requests carry a
 * sequence number the reply echoes. Replies: the request type | REPLY, or
 * SSQ_MSG_ERROR with a negative errno and a sentence. HELLO's reply carries
 * the arena's file descriptor, ATTACH's the UAR's (SCM_RIGHTS); MEM_REG
 * carries the client's memory file (SCM_RIGHTS), which ssqd keeps.
 * Host byte order: both ends are on one host.
 */
#ifndef SSQ_CTRL_PROTO_H
#define SSQ_CTRL_PROTO_H

#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include "shm/layout.h"

#define SSQ_PROTO_MAGIC   0x51515353u /* "SSQQ" */
#define SSQ_PROTO_VERSION 5u          /* 5: LIST says each queue's rate */
#define SSQ_MSG_MAX       4096u       /* no message is longer (LIST: 64 queues) */
#define SSQ_ERRMSG_MAX    160u
#define SSQ_ALLOC_MAX     (1ull << 40)
/* The IBV_ACCESS_* bits a MEM_REG may ask for (values of <infiniband/verbs.h>). */
#define SSQ_MEM_ACCESS_ALL 0xfu
/* Those that write (ib_access_writable, less MW_BIND): LOCAL_WRITE, REMOTE_WRITE,
 * _ATOMIC. */
#define SSQ_MEM_ACCESS_WRITES 0xbu
/* The remote ones, what a GRANT may give: REMOTE_WRITE, _READ, _ATOMIC. */
#define SSQ_MEM_ACCESS_REMOTE 0xeu

enum proto_msg_type {
	SSQ_MSG_HELLO = 1,     /* client: pid; reply: version, device, arena fd */
	SSQ_MSG_LIST = 2,      /* reply: the queues */
	SSQ_MSG_ATTACH = 3,    /* name; reply: queue index, UAR fd */
	SSQ_MSG_ALLOC = 4,     /* length, alignment; reply: data arena offset */
	SSQ_MSG_FREE = 5,      /* offset */
	SSQ_MSG_DETACH = 6,    /* queue index */
	SSQ_MSG_RECOVER = 7,   /* queue index: QP from ERR back to RTS */
	SSQ_MSG_MEM_REG = 8,   /* kind, access, range + a fd; reply: id, keys */
	SSQ_MSG_MEM_DEREG = 9, /* id */
	SSQ_MSG_VERBS = 10,    /* reply: ssqd's PD handle + its verbs command fd */
	SSQ_MSG_PEER = 11,     /* index; reply: that peer of a cluster, its link */
	SSQ_MSG_GRANT = 12,    /* queue, memory, range, access; reply: descriptor */
	SSQ_MSG_REVOKE = 13,   /* rkey a GRANT gave */
	SSQ_MSG_TENANT = 14,   /* index + a connection's fd; reply: that tenant */
	SSQ_MSG_TYPE_MAX = 14,
	SSQ_MSG_REPLY = 0x100, /* OR-ed into a request type */
	SSQ_MSG_ERROR = 0x200,
};

struct proto_msg_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t len; /* payload bytes after this header */
	uint32_t seq;
};

struct proto_msg_hello {
	uint32_t pid;
	uint32_t reserved;
};
struct proto_msg_hello_reply {
	uint32_t version;
	uint32_t max_queues;
	char device[SSQ_NAME_MAX];
	uint64_t arena_len;
	int64_t arena_offset; /* in the passed fd */
};
struct proto_msg_list_reply {
	uint32_t nqueues;
	uint32_t nclients; /* connections that said hello, the asker's included */
	struct {
		char name[SSQ_NAME_MAX];
		uint32_t qpn;
		uint32_t state;
		uint32_t refused; /* its peer's requests refused for a bad key */
		uint32_t opens;   /* producer records its clients hold */
		/*
		 * WQEBBs reserved per second of late, as ssqd samples it
		 * (watch/rate.c): what its pick of "any" weighs first.
		 */
		uint32_t rate;
	} queues[SSQ_MAX_QUEUES];
};
/* The longest reply: all SSQ_MAX_QUEUES queues in one datagram. */
SSQ_STATIC_ASSERT(sizeof(struct proto_msg_list_reply) <= SSQ_MSG_MAX, "LIST fits");
struct proto_msg_attach {
	char name[SSQ_NAME_MAX];
};
struct proto_msg_attach_reply {
	uint32_t queue;
	uint32_t producer;    /* this client's producer record in the queue */
	uint32_t uar_reg_off; /* bf.reg's offset within the mapping */
	/*
	 * The QP's number from ssqd's own state: the layout header's copy is
	 * client-writable, and the doorbell's QPN picks the SQ a ConnectX
	 * starts (several QPs may share a UAR page).
	 */
	uint32_t qpn;
	uint64_t uar_len;
	int64_t uar_offset; /* in the passed fd, page-aligned */
};
struct proto_msg_alloc {
	uint64_t len;
	uint64_t align; /* a power of two, 64 .. 2 MiB */
};
struct proto_msg_alloc_reply {
	uint64_t off; /* from the arena start; IOVA = data_iova + off - data_off */
	uint64_t len;
	uint32_t key; /* its own lkey = rkey; 0: the arena's (ssqd --arena-rkey) */
	uint32_t reserved;
};
struct proto_msg_free {
	uint64_t off;
};
/* DETACH: one open of the queue, by its producer record; RECOVER: the queue. */
struct proto_msg_detach {
	uint32_t queue;
	uint32_t producer;
};
/* What a MEM_REG's file descriptor is. */
enum proto_mem_kind {
	/*
	 * The client's own /proc/self/mem: @addr is an address of its memory,
	 * @iova what WQEs call it (@addr itself; a file's offset when the
	 * client registers its mapping of a file, so the pages it faults in
	 * are its own, not ssqd's).
	 */
	SSQ_MEM_PROCESS = 1,
	/* Shareable memory (a ConnectX: memfd, tmpfs or hugetlbfs file,
	 * dma-buf), mapped and pinned by ssqd: @addr is an offset into it, and
	 * the MR's IOVAs are those offsets. */
	SSQ_MEM_FILE = 2,
	/* On a ConnectX: an MR the client registered in ssqd's PD through the
	 * imported context (SSQ_MSG_VERBS); @addr is its handle, no fd. */
	SSQ_MEM_VERBS = 3,
};
/*
 * In an SSQ_MEM_VERBS MEM_REG's access, beside what was asked (which bounds
 * what may be granted): the client registered the MR as the VERBS reply's
 * flags said, with IBV_ACCESS_MW_BIND (and, under SSQ_VERBS_MR_NO_REMOTE, no
 * remote access). Its value is IBV_ACCESS_MW_BIND's.
 */
#define SSQ_MEM_VERBS_BINDABLE 0x10u
struct proto_msg_mem_reg {
	uint32_t kind;   /* enum proto_mem_kind */
	uint32_t access; /* IBV_ACCESS_LOCAL_WRITE / REMOTE_WRITE / _READ / _ATOMIC */
	uint64_t addr;
	uint64_t len;  /* 1 .. SSQ_ALLOC_MAX */
	uint64_t iova; /* SSQ_MEM_PROCESS: what the first byte is to WQEs */
};
struct proto_msg_mem_reg_reply {
	uint32_t id;   /* what MEM_DEREG names */
	uint32_t lkey; /* for this host's WQEs */
	uint32_t rkey; /* for a peer's */
	uint32_t reserved;
	uint64_t iova; /* of the first byte */
};
/*
 * VERBS reply flags: how a client registers its own memory so that ssqd
 * can grant it (issue 28 item 1). An MR's access cannot be read back from
 * the kernel (UVERBS_METHOD_QUERY_MR answers lkey, rkey, length and IOVA
 * only: drivers/infiniband/core/uverbs_std_types_mr.c), so ssqd says what
 * it needs and the client's MEM_REG says it did (SSQ_MEM_VERBS_BINDABLE).
 */
#define SSQ_VERBS_MR_BIND 0x1u /* add IBV_ACCESS_MW_BIND where remote access is asked */
#define SSQ_VERBS_MR_NO_REMOTE                                                           \
	0x2u /* and no remote access: peers reach it by grants only */
struct proto_msg_verbs_reply {
	uint32_t pd_handle;
	uint32_t flags; /* SSQ_VERBS_MR_* */
};
/* PEER: one peer of ssqd's (index below npeers), as ssq_client_peers shows it. */
#define SSQ_PEER_ADDR_MAX 64u
#define SSQ_PEER_WHY_MAX  128u
struct proto_msg_peer {
	uint32_t index;
	uint32_t reserved;
};
struct proto_msg_peer_reply {
	uint32_t npeers;
	uint32_t state; /* enum ssq_peer_state */
	uint32_t first_queue, nqueues;
	uint32_t attempts, links, losses;
	uint32_t flags; /* SSQ_PEER_* of <ssq/client.h> */
	/*
	 * Requests of this peer's that came with a key not granted to it (a
	 * remote access error at our end of its queues), since ssqd started.
	 */
	uint32_t refused;
	uint32_t reserved;
	char name[SSQ_NAME_MAX];
	char addr[SSQ_PEER_ADDR_MAX];
	char why[SSQ_PEER_WHY_MAX];
};
/*
 * GRANT: remote access to a range of this client's buffer or registration,
 * for the peer of queue @name alone (a type-2 memory window bound to that
 * queue's QP). @name first: ATTACH's layout, so the queue is found and
 * made ready by the same code.
 */
enum proto_grant_kind {
	SSQ_GRANT_BUF =
	    1, /* @mem: the buffer's arena offset (proto_msg_alloc_reply.off) */
	SSQ_GRANT_MR = 2, /* @mem: the registration's id (proto_msg_mem_reg_reply.id) */
};
struct proto_msg_grant {
	char name[SSQ_NAME_MAX];
	uint32_t kind;   /* enum proto_grant_kind */
	uint32_t access; /* IBV_ACCESS_REMOTE_WRITE / _READ / _ATOMIC, at least one */
	uint64_t mem;
	uint64_t off; /* bytes into the buffer or registration */
	uint64_t len; /* 1 .. SSQ_ALLOC_MAX */
};
struct proto_msg_grant_reply {
	uint64_t remote_addr; /* what the peer's WQEs carry for byte @off */
	uint64_t len;
	uint32_t rkey; /* the window's: valid at that queue's QP only */
	uint32_t reserved;
};
struct proto_msg_revoke {
	uint32_t rkey;
	uint32_t reserved;
};
/*
 * TENANT (ssqd --status under --tenants; tenant_status.c): the @index'th
 * tenant's ssqd this one runs, and the connection that came with the
 * request (one end of a socketpair the asker made) handed to it as a
 * client's, for the asker to ask it LIST itself. Only ssqd's own uid or
 * root may ask: every tenant's ssqd runs as ssqd's uid (docs/trust.md).
 */
#define SSQ_TENANT_WHY_MAX 96u
struct proto_msg_tenant {
	uint32_t index;
	uint32_t reserved;
};
struct proto_msg_tenant_reply {
	uint32_t ntenants; /* tenants' ssqd running besides this one */
	uint32_t kind;     /* 1: a uid's, 2: a gid's (SSQD_TENANTS_*) */
	uint32_t id;       /* that uid or gid */
	int32_t pid;       /* its ssqd */
	uint32_t passed;   /* 1: the connection went to it; 0: @why says why not */
	/*
	 * @closing 1: it exits (idle, or found dead and killed) and takes
	 * nothing more (@passed 0); @parked: connections of its uid waiting
	 * for it to be gone, to go to the ssqd started after it
	 * (tenant_park.c). Both were one reserved word, 0: an older ssqd
	 * lists no closing tenant.
	 */
	uint16_t closing;
	uint16_t parked;
	char why[SSQ_TENANT_WHY_MAX];
};
struct proto_msg_mem_dereg {
	uint32_t id;
	uint32_t reserved;
};
struct proto_msg_error {
	int32_t err; /* negative errno */
	char msg[SSQ_ERRMSG_MAX];
};

/* A decoded message: the header and the payload, by type. */
struct proto_msg {
	struct proto_msg_hdr hdr;
	union {
		struct proto_msg_hello hello;
		struct proto_msg_hello_reply hello_reply;
		struct proto_msg_list_reply list_reply;
		struct proto_msg_attach attach;
		struct proto_msg_attach_reply attach_reply;
		struct proto_msg_alloc alloc;
		struct proto_msg_alloc_reply alloc_reply;
		struct proto_msg_free free;
		struct proto_msg_detach detach;
		struct proto_msg_mem_reg mem_reg;
		struct proto_msg_mem_reg_reply mem_reg_reply;
		struct proto_msg_mem_dereg mem_dereg;
		struct proto_msg_verbs_reply verbs_reply;
		struct proto_msg_peer peer;
		struct proto_msg_peer_reply peer_reply;
		struct proto_msg_grant grant;
		struct proto_msg_grant_reply grant_reply;
		struct proto_msg_revoke revoke;
		struct proto_msg_tenant tenant;
		struct proto_msg_tenant_reply tenant_reply;
		struct proto_msg_error error;
		uint8_t raw[SSQ_MSG_MAX];
	} u;
};

/*
 * proto_msg_payload_len - the payload size @type must have, or -1 for a
 * type that does not exist.
 */
int proto_msg_payload_len(uint32_t type);

/*
 * proto_msg_decode - check and copy one received datagram of @n bytes:
 * magic, version, a known type, the exact payload length, NUL-terminated
 * strings, and each field in range. Returns 0, or -EBADMSG / -EPROTO
 * (version) with the reason in @why; @out is then undefined.
 */
int proto_msg_decode(const void *buf, size_t n, struct proto_msg *out, char *why,
                     size_t whylen);

/*
 * proto_msg_send - send header + @payload (@len bytes, which must match the
 * type) and, if @nfds, the descriptors in @fds. Returns 0 or a negative
 * errno (-EPIPE when the peer is gone).
 */
int proto_msg_send(int sock, uint16_t type, uint32_t seq, const void *payload,
                   uint32_t len, const int *fds, int nfds);

/*
 * proto_msg_recv - wait up to @timeout_ms (-1: forever) for one message,
 * decode it into @out and take up to @maxfds descriptors into @fds (*@nfds
 * says how many; extra ones are closed). Returns 0, -ETIMEDOUT, -ENOTCONN
 * (peer closed), -EBADMSG / -EPROTO (bad message, @why says why), or the
 * negative errno of recvmsg.
 */
int proto_msg_recv(int sock, struct proto_msg *out, int *fds, int maxfds, int *nfds,
                   int timeout_ms, char *why, size_t whylen);

/* Fill @e: @err (a negative errno; anything else becomes -EINVAL) and the text. */
void proto_msg_verror(struct proto_msg_error *e, int err, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* proto_msg_send_error - an SSQ_MSG_ERROR reply with printf-style text. */
int proto_msg_send_error(int sock, uint32_t seq, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif /* SSQ_CTRL_PROTO_H */
