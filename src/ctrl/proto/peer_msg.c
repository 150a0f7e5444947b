/* SPDX-License-Identifier: MIT */
/*
 * The peer message of the rc_pingpong-style exchange between two ssqd: its
 * fixed binary layout, encoded and checked here; the TCP side is
 * src/ctrl/daemon/peers/link.c.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>
#include "ctrl/proto/peer_msg.h"
#include "wire_bytes.h"

static const uint8_t peer_magic[4] = { 'S', 'S', 'Q', 'P' };
/* In place of the first address: "no", and why (NUL-terminated text). */
static const uint8_t refuse_magic[4] = { 'S', 'S', 'Q', 'N' };
/* After the exchange: one queue's restart (peer_msg.h). */
static const uint8_t restart_magic[4] = { 'S', 'S', 'Q', 'R' };
/* A cluster's "dial me": see peer_msg.h. */
static const uint8_t want_magic[4] = { 'S', 'S', 'Q', 'W' };
/* Authentication, before anything else with --peer-key: see peer_msg.h. */
static const uint8_t auth_magic[4] = { 'S', 'S', 'Q', 'A' };
/* A tenant's connection, before anything else under --tenants: see peer_msg.h. */
static const uint8_t tenant_magic[4] = { 'S', 'S', 'Q', 'T' };

/* Wire layout, offsets in bytes; every integer big-endian. */
enum {
	OFF_MAGIC = 0,    /* 4 */
	OFF_VERSION = 4,  /* 2 */
	OFF_COUNT = 6,    /* 2 */
	OFF_INDEX = 8,    /* 2 */
	OFF_LID = 10,     /* 2 */
	OFF_QPN = 12,     /* 4 */
	OFF_PSN = 16,     /* 4 */
	OFF_GID = 20,     /* 16 */
	OFF_IOVA = 36,    /* 8 */
	OFF_RKEY = 44,    /* 4 */
	OFF_NAME = 48,    /* 32 */
	OFF_LINK = 80,    /* 1: IBV_LINK_LAYER_* */
	OFF_MTU = 81,     /* 1: enum ibv_mtu */
	OFF_RD_ATOM = 82, /* 1 */
	OFF_PAD = 83,     /* 5, zero */
	OFF_REASON = 8,   /* a refusal: the reason, to the end */
};
/* A restart: the header, then these. */
enum {
	ROFF_INDEX = 8,     /* 2 */
	ROFF_KIND = 10,     /* 1 */
	ROFF_STATUS = 11,   /* 1 */
	ROFF_SEQ = 12,      /* 4 */
	ROFF_PSN = 16,      /* 4 */
	ROFF_PEER_PSN = 20, /* 4 */
};
_Static_assert(ROFF_PEER_PSN + 4 == SSQ_PEER_RESTART_LEN, "restart layout");
/* Authentication: the header, then these. */
enum {
	AOFF_KIND = 8,   /* 1, then 3 zero */
	AOFF_GEN = 12,   /* 4 */
	AOFF_NAME = 16,  /* SSQ_NAME_MAX */
	AOFF_NONCE = 48, /* SSQ_PEER_NONCE_LEN */
	AOFF_MAC = 80,   /* SSQ_PEER_MAC_LEN */
};
/* A tenant's: the header, then these. */
enum {
	TOFF_KIND = 8, /* 1, then 3 zero */
	TOFF_ID = 12,  /* 4 */
};
_Static_assert(TOFF_ID + 4 == SSQ_PEER_TENANT_LEN, "tenant layout");
_Static_assert(AOFF_NAME + SSQ_NAME_MAX == AOFF_NONCE, "auth layout");
_Static_assert(AOFF_NONCE + SSQ_PEER_NONCE_LEN == AOFF_MAC, "auth layout");
_Static_assert(AOFF_MAC + SSQ_PEER_MAC_LEN == SSQ_PEER_AUTH_LEN, "auth layout");
_Static_assert(OFF_PAD + 5 == SSQ_PEER_MSG_LEN, "peer message layout");
_Static_assert(OFF_NAME + SSQ_NAME_MAX == SSQ_PEER_REFUSAL_LEN, "refusal layout");
_Static_assert(OFF_COUNT + 2 == SSQ_PEER_HEAD_LEN, "header layout");
_Static_assert(SSQ_PEER_HEAD_LEN + SSQ_NAME_MAX == SSQ_PEER_WANT_LEN, "want layout");

/* Every message's header: @magic, this version, @count; the rest of @len zero. */
static void put_head(uint8_t *out, size_t len, const uint8_t magic[4], uint16_t count)
{
	memset(out, 0, len);
	memcpy(out + OFF_MAGIC, magic, 4);
	wb_put_be16(out + OFF_VERSION, SSQ_PEER_VERSION);
	wb_put_be16(out + OFF_COUNT, count);
}

/*
 * @buf, @n bytes off the wire, must be one whole @magic message of @len
 * bytes: 0, or -errno with @why (a header that is not ours, or "peer sent
 * a message of N bytes @instead").
 */
static int expect(const uint8_t *buf, size_t n, const uint8_t magic[4], size_t len,
                  const char *instead, char *why, size_t whylen)
{
	int got;

	if (n < SSQ_PEER_HEAD_LEN) {
		snprintf(why, whylen, "peer message of %zu bytes", n);
		return -EBADMSG;
	}
	got = proto_peer_msg_len(buf, why, whylen);
	if (got < 0)
		return got;
	if (memcmp(buf + OFF_MAGIC, magic, 4) || n != len) {
		snprintf(why, whylen, "peer sent a message of %zu bytes %s", n, instead);
		return -EBADMSG;
	}
	return 0;
}

void proto_peer_encode(const struct proto_peer_addr *a, uint8_t *out)
{
	put_head(out, SSQ_PEER_MSG_LEN, peer_magic, a->count);
	wb_put_be16(out + OFF_INDEX, a->index);
	wb_put_be16(out + OFF_LID, a->lid);
	wb_put_be32(out + OFF_QPN, a->qpn);
	wb_put_be32(out + OFF_PSN, a->psn);
	memcpy(out + OFF_GID, a->gid, 16);
	wb_put_be64(out + OFF_IOVA, a->data_iova);
	wb_put_be32(out + OFF_RKEY, a->data_rkey);
	memcpy(out + OFF_NAME, a->name, strnlen(a->name, SSQ_NAME_MAX - 1));
	out[OFF_LINK] = a->link_layer;
	out[OFF_MTU] = a->mtu;
	out[OFF_RD_ATOM] = a->rd_atom;
}

/*
 * A name off the wire (@n bytes, NUL-terminated within them): 1 when it
 * is only [A-Za-z0-9._-], what --name and a peers file allow (ssqd checks
 * them at start, ssqd_peer_name_ok), and empty only where @empty_ok (the
 * one-peer modes' HELLO and CHALLENGE). A name is logged: a newline or a
 * "<3>" of a stranger's would write a line of its choosing into ssqd's
 * log (journald reads a priority there).
 */
static int wire_name_ok(const uint8_t *name, size_t n, int empty_ok)
{
	size_t i;

	if (!memchr(name, 0, n) || (!name[0] && !empty_ok))
		return 0;
	for (i = 0; name[i]; i++)
		if (!(name[i] >= 'a' && name[i] <= 'z') &&
		    !(name[i] >= 'A' && name[i] <= 'Z') &&
		    !(name[i] >= '0' && name[i] <= '9') && !strchr("._-", name[i]))
			return 0;
	return 1;
}

int proto_peer_msg_len(const uint8_t *head, char *why, size_t whylen)
{
	if (!memcmp(head + OFF_MAGIC, refuse_magic, 4))
		return SSQ_PEER_REFUSAL_LEN;
	if (memcmp(head + OFF_MAGIC, peer_magic, 4) &&
	    memcmp(head + OFF_MAGIC, restart_magic, 4) &&
	    memcmp(head + OFF_MAGIC, want_magic, 4) &&
	    memcmp(head + OFF_MAGIC, auth_magic, 4) &&
	    memcmp(head + OFF_MAGIC, tenant_magic, 4)) {
		snprintf(why, whylen, "peer message without the SSQP magic");
		return -EBADMSG;
	}
	if (wb_get_be16(head + OFF_VERSION) != SSQ_PEER_VERSION) {
		snprintf(why, whylen,
		         "peer speaks exchange version %u, this ssqd %u: run the same "
		         "ssq release on both hosts",
		         wb_get_be16(head + OFF_VERSION), SSQ_PEER_VERSION);
		return -EPROTO;
	}
	if (!memcmp(head + OFF_MAGIC, want_magic, 4))
		return SSQ_PEER_WANT_LEN;
	if (!memcmp(head + OFF_MAGIC, auth_magic, 4))
		return SSQ_PEER_AUTH_LEN;
	if (!memcmp(head + OFF_MAGIC, tenant_magic, 4))
		return SSQ_PEER_TENANT_LEN;
	return memcmp(head + OFF_MAGIC, restart_magic, 4) ? (int)SSQ_PEER_MSG_LEN
	                                                  : (int)SSQ_PEER_RESTART_LEN;
}

void proto_peer_encode_want(const char *name, uint16_t count, uint8_t *out)
{
	put_head(out, SSQ_PEER_WANT_LEN, want_magic, count);
	memcpy(out + SSQ_PEER_HEAD_LEN, name, strnlen(name, SSQ_NAME_MAX - 1));
}

void proto_peer_encode_auth(const struct proto_peer_auth *a, uint8_t *out)
{
	put_head(out, SSQ_PEER_AUTH_LEN, auth_magic, a->count);
	out[AOFF_KIND] = a->kind;
	wb_put_be32(out + AOFF_GEN, a->gen);
	memcpy(out + AOFF_NAME, a->name, strnlen(a->name, SSQ_NAME_MAX - 1));
	memcpy(out + AOFF_NONCE, a->nonce, SSQ_PEER_NONCE_LEN);
	memcpy(out + AOFF_MAC, a->mac, SSQ_PEER_MAC_LEN);
}

int proto_peer_decode_auth(const uint8_t *buf, size_t n, struct proto_peer_auth *a,
                           char *why, size_t whylen)
{
	int rc = expect(buf, n, auth_magic, SSQ_PEER_AUTH_LEN,
	                "where its authentication was due", why, whylen);

	if (rc)
		return rc;
	memset(a, 0, sizeof(*a));
	a->kind = buf[AOFF_KIND];
	a->count = wb_get_be16(buf + OFF_COUNT);
	a->gen = wb_get_be32(buf + AOFF_GEN);
	if (a->kind < PROTO_AUTH_HELLO || a->kind > PROTO_AUTH_PROOF ||
	    buf[AOFF_KIND + 1] || buf[AOFF_KIND + 2] || buf[AOFF_KIND + 3]) {
		snprintf(why, whylen,
		         "peer authentication of kind %u (1 hello, 2 challenge, 3 proof)",
		         a->kind);
		return -EBADMSG;
	}
	if (!wire_name_ok(buf + AOFF_NAME, SSQ_NAME_MAX, 1)) {
		snprintf(why, whylen,
		         "peer authentication with a name not NUL-terminated or not "
		         "of [A-Za-z0-9._-]");
		return -EBADMSG;
	}
	memcpy(a->name, buf + AOFF_NAME, strlen((const char *)buf + AOFF_NAME));
	memcpy(a->nonce, buf + AOFF_NONCE, SSQ_PEER_NONCE_LEN);
	memcpy(a->mac, buf + AOFF_MAC, SSQ_PEER_MAC_LEN);
	return 0;
}

void proto_peer_encode_tenant(const struct proto_peer_tenant *t, uint8_t *out)
{
	put_head(out, SSQ_PEER_TENANT_LEN, tenant_magic, t->count);
	out[TOFF_KIND] = t->kind;
	wb_put_be32(out + TOFF_ID, t->id);
}

int proto_peer_decode_tenant(const uint8_t *buf, size_t n, struct proto_peer_tenant *t,
                             char *why, size_t whylen)
{
	int rc = expect(buf, n, tenant_magic, SSQ_PEER_TENANT_LEN,
	                "where its tenant was due", why, whylen);

	if (rc)
		return rc;
	memset(t, 0, sizeof(*t));
	t->kind = buf[TOFF_KIND];
	t->count = wb_get_be16(buf + OFF_COUNT);
	t->id = wb_get_be32(buf + TOFF_ID);
	if ((t->kind != PROTO_TENANT_UID && t->kind != PROTO_TENANT_GID) ||
	    buf[TOFF_KIND + 1] || buf[TOFF_KIND + 2] || buf[TOFF_KIND + 3]) {
		snprintf(why, whylen, "peer tenant of kind %u (1 uid, 2 gid)", t->kind);
		return -EBADMSG;
	}
	return 0;
}

void proto_peer_encode_restart(const struct proto_peer_restart *r, uint16_t count,
                               uint8_t *out)
{
	put_head(out, SSQ_PEER_RESTART_LEN, restart_magic, count);
	wb_put_be16(out + ROFF_INDEX, r->index);
	out[ROFF_KIND] = r->kind;
	out[ROFF_STATUS] = r->status;
	wb_put_be32(out + ROFF_SEQ, r->seq);
	wb_put_be32(out + ROFF_PSN, r->psn);
	wb_put_be32(out + ROFF_PEER_PSN, r->peer_psn);
}

int proto_peer_decode_restart(const uint8_t *buf, size_t n, uint16_t count,
                              struct proto_peer_restart *r, char *why, size_t whylen)
{
	int rc = expect(buf, n, restart_magic, SSQ_PEER_RESTART_LEN,
	                "that is not a queue restart (the only message after the "
	                "exchange)",
	                why, whylen);

	if (rc)
		return rc;
	memset(r, 0, sizeof(*r));
	r->index = wb_get_be16(buf + ROFF_INDEX);
	r->kind = buf[ROFF_KIND];
	r->status = buf[ROFF_STATUS];
	r->seq = wb_get_be32(buf + ROFF_SEQ);
	r->psn = wb_get_be32(buf + ROFF_PSN);
	r->peer_psn = wb_get_be32(buf + ROFF_PEER_PSN);
	if (wb_get_be16(buf + OFF_COUNT) != count || r->index >= count) {
		snprintf(why, whylen, "peer restart of queue %u of %u, this link has %u",
		         r->index, wb_get_be16(buf + OFF_COUNT), count);
		return -EBADMSG;
	}
	if (r->kind < PROTO_RESTART_ASK || r->kind > PROTO_LINK_CLOSE) {
		snprintf(why, whylen,
		         "peer restart of kind %u (1 ask, 2 done, 3 busy, 4 idle, 5 "
		         "close)",
		         r->kind);
		return -EBADMSG;
	}
	if (r->kind >= PROTO_LINK_BUSY &&
	    (r->index || r->status || r->seq || r->psn || r->peer_psn)) {
		snprintf(why, whylen, "peer busy/idle message with fields set");
		return -EBADMSG;
	}
	if (r->kind == PROTO_RESTART_ASK &&
	    (r->status || r->psn > 0xffffff || r->peer_psn > 0xffffff)) {
		snprintf(why, whylen,
		         "peer restart ask with status %u or a PSN wider than 24 bits "
		         "(0x%x, 0x%x)",
		         r->status, r->psn, r->peer_psn);
		return -EBADMSG;
	}
	if (r->kind == PROTO_RESTART_DONE && (r->psn || r->peer_psn)) {
		snprintf(why, whylen, "peer restart answer carrying PSNs");
		return -EBADMSG;
	}
	return 0;
}

int proto_peer_decode(const uint8_t *buf, size_t n, struct proto_peer_addr *a, char *why,
                      size_t whylen)
{
	int len = n >= SSQ_PEER_HEAD_LEN ? proto_peer_msg_len(buf, why, whylen)
	                                 : (int)SSQ_PEER_MSG_LEN;

	if (len < 0)
		return len;
	if (n != (size_t)len) {
		snprintf(why, whylen, "peer message of %zu bytes, expected %d", n, len);
		return -EBADMSG;
	}
	if (!memcmp(buf + OFF_MAGIC, restart_magic, 4)) {
		snprintf(why, whylen,
		         "peer sent a queue restart where its address was due");
		return -EBADMSG;
	}
	if (!memcmp(buf + OFF_MAGIC, auth_magic, 4)) {
		snprintf(why, whylen,
		         "peer authenticates (--peer-key) and this ssqd has no "
		         "--peer-key: give both the cluster's key");
		return -EBADMSG;
	}
	if (!memcmp(buf + OFF_MAGIC, tenant_magic, 4)) {
		snprintf(why, whylen,
		         "peer sent a tenant (it runs --tenants) where its address "
		         "was due");
		return -EBADMSG;
	}
	if (!memcmp(buf + OFF_MAGIC, want_magic, 4)) {
		const char *name = (const char *)buf + SSQ_PEER_HEAD_LEN;

		if (!wire_name_ok((const uint8_t *)name, SSQ_NAME_MAX, 0)) {
			snprintf(why, whylen,
			         "peer want with a name empty, not NUL-terminated or "
			         "not of [A-Za-z0-9._-]");
			return -EBADMSG;
		}
		memset(a, 0, sizeof(*a));
		a->count = wb_get_be16(buf + OFF_COUNT);
		memcpy(a->name, name, strlen(name));
		return PROTO_PEER_WANT;
	}
	if (!memcmp(buf + OFF_MAGIC, refuse_magic, 4)) {
		char reason[SSQ_PEER_REFUSAL_LEN - OFF_REASON];
		size_t i;

		if (!memchr(buf + OFF_REASON, 0, sizeof(reason))) {
			snprintf(why, whylen,
			         "peer refused, with an unterminated reason");
			return -EBADMSG;
		}
		/* Shown on a terminal: nothing but printable ASCII. */
		for (i = 0; buf[OFF_REASON + i]; i++)
			reason[i] =
			    buf[OFF_REASON + i] >= 0x20 && buf[OFF_REASON + i] < 0x7f
			        ? (char)buf[OFF_REASON + i]
			        : '?';
		reason[i] = 0;
		snprintf(why, whylen, "peer refused: %s", reason);
		return -ECONNREFUSED;
	}
	memset(a, 0, sizeof(*a));
	a->count = wb_get_be16(buf + OFF_COUNT);
	a->index = wb_get_be16(buf + OFF_INDEX);
	a->lid = wb_get_be16(buf + OFF_LID);
	a->qpn = wb_get_be32(buf + OFF_QPN);
	a->psn = wb_get_be32(buf + OFF_PSN);
	memcpy(a->gid, buf + OFF_GID, 16);
	a->data_iova = wb_get_be64(buf + OFF_IOVA);
	a->data_rkey = wb_get_be32(buf + OFF_RKEY);
	if (!a->count || a->count > SSQ_MAX_QUEUES || a->index >= a->count) {
		snprintf(why, whylen, "peer queue %u of %u (at most %u queues)", a->index,
		         a->count, SSQ_MAX_QUEUES);
		return -EBADMSG;
	}
	if (a->qpn > 0xffffff || a->psn > 0xffffff) {
		snprintf(why, whylen, "peer QPN 0x%x or PSN 0x%x is wider than 24 bits",
		         a->qpn, a->psn);
		return -EBADMSG;
	}
	if (!wire_name_ok(buf + OFF_NAME, SSQ_NAME_MAX, 0)) {
		snprintf(why, whylen,
		         "peer queue name empty, not NUL-terminated or not of "
		         "[A-Za-z0-9._-]");
		return -EBADMSG;
	}
	a->link_layer = buf[OFF_LINK];
	a->mtu = buf[OFF_MTU];
	a->rd_atom = buf[OFF_RD_ATOM];
	if (a->link_layer != IBV_LINK_LAYER_INFINIBAND &&
	    a->link_layer != IBV_LINK_LAYER_ETHERNET) {
		snprintf(why, whylen,
		         "peer link layer %u is neither InfiniBand (%u) nor "
		         "Ethernet (%u)",
		         a->link_layer, IBV_LINK_LAYER_INFINIBAND,
		         IBV_LINK_LAYER_ETHERNET);
		return -EBADMSG;
	}
	if (a->mtu < IBV_MTU_256 || a->mtu > IBV_MTU_4096) {
		snprintf(why, whylen,
		         "peer MTU code %u is not IBV_MTU_256 .. IBV_MTU_4096", a->mtu);
		return -EBADMSG;
	}
	if (!a->rd_atom) {
		snprintf(why, whylen, "peer takes 0 READs/atomics as responder");
		return -EBADMSG;
	}
	/* Only the string: bytes after its NUL are not part of the message. */
	memcpy(a->name, buf + OFF_NAME, strlen((const char *)buf + OFF_NAME));
	return 0;
}

void proto_peer_encode_refusal(const char *reason, uint8_t *out)
{
	put_head(out, SSQ_PEER_REFUSAL_LEN, refuse_magic, 0);
	memcpy(out + OFF_REASON, reason,
	       strnlen(reason, SSQ_PEER_REFUSAL_LEN - OFF_REASON - 1));
}
