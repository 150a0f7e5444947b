/* SPDX-License-Identifier: MIT */
/*
 * ssq_desc_pack / ssq_desc_unpack (issue 30, newcomer review F4: users wrote
 * "remote_addr rkey" by hand, as rc_pingpong does):
 *  - round trip: every field back, and the packed bytes are the documented
 *    little-endian layout on any host (golden bytes);
 *  - truncated (4 and 63 of 64 bytes): -EMSGSIZE;
 *  - another version: -EPROTONOSUPPORT; not a descriptor, a flipped bit, a
 *    reserved field set: -EBADMSG;
 *  - from another peer than the one expected: -EXDEV; NULL takes any;
 *  - pack: a short buffer -ENOSPC, an unterminated owner -EINVAL.
 */
#include <errno.h>
#include <string.h>
#include <ssq/ssq.h>
#include "helpers.h"

int main(void)
{
	struct ssq_desc d = { .remote_addr = 0x0011223344556677ull,
		              .length = 0x10000ull,
		              .rkey = 0xa1b2c3d4u,
		              .owner = "bob" };
	struct ssq_desc out;
	uint8_t w[SSQ_DESC_PACKED_SIZE + 8], bad[SSQ_DESC_PACKED_SIZE];
	static const uint8_t addr_le[8] = {
		0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00
	};
	static const uint8_t rkey_le[4] = { 0xd4, 0xc3, 0xb2, 0xa1 };
	int rc;

	rc = ssq_desc_pack(&d, w, sizeof(w));
	CHECK(rc == (int)SSQ_DESC_PACKED_SIZE, "pack: %d", rc);
	CHECK(!memcmp(w, "SSQd", 4) && w[4] == SSQ_DESC_VERSION && w[5] == 0 &&
	          w[6] == 64 && w[7] == 0,
	      "header bytes %02x %02x %02x %02x | %02x %02x %02x %02x", w[0], w[1], w[2],
	      w[3], w[4], w[5], w[6], w[7]);
	CHECK(!memcmp(w + 8, addr_le, 8) && !memcmp(w + 24, rkey_le, 4) &&
	          !memcmp(w + 32, "bob", 4),
	      "fields are not little-endian at their offsets");

	memset(&out, 0x5a, sizeof(out));
	rc = ssq_desc_unpack(w, SSQ_DESC_PACKED_SIZE, "bob", &out);
	CHECK(rc == 0 && out.remote_addr == d.remote_addr && out.length == d.length &&
	          out.rkey == d.rkey && !strcmp(out.owner, "bob") && out.reserved == 0,
	      "round trip: %d addr 0x%llx len %llu rkey 0x%x owner '%.24s'", rc,
	      (unsigned long long)out.remote_addr, (unsigned long long)out.length,
	      out.rkey, out.owner);
	CHECK(ssq_desc_unpack(w, sizeof(w), NULL, &out) == 0 && !strcmp(out.owner, "bob"),
	      "NULL from takes any owner; trailing bytes are ignored");

	memset(&out, 0x5a, sizeof(out));
	rc = ssq_desc_unpack(w, SSQ_DESC_PACKED_SIZE - 1, "bob", &out);
	CHECK(rc == -EMSGSIZE, "63 bytes: %d, want -EMSGSIZE", rc);
	CHECK(out.rkey == 0x5a5a5a5au, "a failed unpack wrote *out");
	rc = ssq_desc_unpack(w, 4, "bob", &out);
	CHECK(rc == -EMSGSIZE, "4 bytes: %d, want -EMSGSIZE", rc);

	memcpy(bad, w, sizeof(bad));
	bad[4] = 2;
	rc = ssq_desc_unpack(bad, sizeof(bad), "bob", &out);
	CHECK(rc == -EPROTONOSUPPORT, "version 2: %d, want -EPROTONOSUPPORT", rc);

	memcpy(bad, w, sizeof(bad));
	bad[0] ^= 0x20;
	rc = ssq_desc_unpack(bad, sizeof(bad), "bob", &out);
	CHECK(rc == -EBADMSG, "bad magic: %d, want -EBADMSG", rc);
	memcpy(bad, w, sizeof(bad));
	bad[26] ^= 0x01; /* one bit of the rkey */
	rc = ssq_desc_unpack(bad, sizeof(bad), "bob", &out);
	CHECK(rc == -EBADMSG, "a flipped rkey bit: %d, want -EBADMSG", rc);

	rc = ssq_desc_unpack(w, SSQ_DESC_PACKED_SIZE, "carol", &out);
	CHECK(rc == -EXDEV, "bob's descriptor expected from carol: %d, want -EXDEV", rc);
	rc = ssq_desc_unpack(w, SSQ_DESC_PACKED_SIZE, "bo", &out);
	CHECK(rc == -EXDEV, "bob's descriptor expected from bo: %d, want -EXDEV", rc);

	CHECK(ssq_desc_pack(&d, w, SSQ_DESC_PACKED_SIZE - 1) == -ENOSPC,
	      "pack into 63 bytes");
	memset(d.owner, 'x', sizeof(d.owner));
	CHECK(ssq_desc_pack(&d, w, sizeof(w)) == -EINVAL, "an unterminated owner");
	CHECK(ssq_desc_unpack(NULL, 64, NULL, &out) == -EINVAL, "NULL buffer");
	return test_exit("dv_desc");
}
