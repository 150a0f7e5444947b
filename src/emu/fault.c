/* SPDX-License-Identifier: MIT */
/*
 * Modes and fault injection from the environment (SSQ_EMU_MODE,
 * SSQ_EMU_FAULT, SSQ_EMU_TRACE, SSQ_EMU_POLL_NS; syntax in <ssq/emu.h>), so a test or a
 * daemon run can drive every error path without code changes. A bad value
 * is refused with a message naming it: a typo must not silently run the
 * healthy device.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "emu/emu_pvt.h"

/* Parse an unsigned number (decimal or 0x hex) up to @max from [@s, @end). */
static int parse_num(const char *s, const char *end, uint64_t max, uint64_t *out)
{
	char buf[32], *e;
	size_t len = (size_t)(end - s);
	unsigned long long v;
	int saved = errno, err;

	if (!len || len >= sizeof(buf) || *s == '-' || *s == '+')
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	/* strtoull reports overflow only through errno: keep the caller's. */
	errno = 0;
	v = strtoull(buf, &e, 0);
	err = errno;
	errno = saved;
	if (err || *e || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "ssq_emu: SSQ_EMU_FAULT='err_at=x': bad value in 'err_at=x'" */
static int bad(const char *var, const char *full, const char *why, const char *item,
               size_t len)
{
	fprintf(stderr, "ssq_emu: %s='%s': %s '%.*s'\n", var, full, why, (int)len, item);
	return -EINVAL;
}

int emu_parse_fault(const char *s, struct emu_fault *f)
{
	const char *p = s;

	if (!s || !f)
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	while (*p) {
		const char *end = strchr(p, ','), *eq;
		size_t klen;
		uint64_t v;

		if (!end)
			end = p + strlen(p);
		eq = memchr(p, '=', (size_t)(end - p));
		if (!eq)
			return bad("SSQ_EMU_FAULT", s, "item is not key=value:", p,
			           (size_t)(end - p));
		klen = (size_t)(eq - p);
#define KEY(k) (klen == sizeof(k) - 1 && !strncmp(p, k, klen))
		if (KEY("err_at")) {
			if (parse_num(eq + 1, end, UINT64_MAX, &v) || !v)
				goto bad_value;
			f->err_at = v;
		} else if (KEY("syndrome")) {
			if (parse_num(eq + 1, end, 255, &v) || !v)
				goto bad_value;
			f->syndrome = (uint8_t)v;
		} else if (KEY("vendor")) {
			if (parse_num(eq + 1, end, 255, &v))
				goto bad_value;
			f->vendor_err = (uint8_t)v;
		} else if (KEY("delay")) {
			if (parse_num(eq + 1, end, UINT32_MAX, &v))
				goto bad_value;
			f->delay = (uint32_t)v;
		} else if (KEY("stall")) {
			if (parse_num(eq + 1, end, 1, &v))
				goto bad_value;
			f->stall = (uint8_t)v;
		} else {
			return bad("SSQ_EMU_FAULT", s, "unknown key in", p,
			           (size_t)(end - p));
		}
#undef KEY
		p = *end ? end + 1 : end;
		continue;
	bad_value:
		return bad("SSQ_EMU_FAULT", s, "bad value in", p, (size_t)(end - p));
	}
	return 0;
}

int emu_env_apply(struct emu_dev_attr *attr)
{
	const char *mode = getenv("SSQ_EMU_MODE");
	const char *fault = getenv("SSQ_EMU_FAULT");
	const char *trace = getenv("SSQ_EMU_TRACE");
	const char *poll = getenv("SSQ_EMU_POLL_NS");
	const char *events = getenv("SSQ_EMU_CQ_EVENTS");
	int ret;

	if (mode) {
		if (!strcasecmp(mode, "full"))
			attr->mode = SSQ_EMU_FULL;
		else if (!strcasecmp(mode, "sink"))
			attr->mode = SSQ_EMU_SINK;
		else
			return bad("SSQ_EMU_MODE", mode, "expected full or sink, got",
			           mode, strlen(mode));
	}
	if (fault) {
		ret = emu_parse_fault(fault, &attr->fault);
		if (ret)
			return ret;
	}
	if (trace) {
		if (!*trace)
			return bad("SSQ_EMU_TRACE", trace, "empty path", trace, 0);
		attr->trace_path = trace;
	}
	if (poll) {
		uint64_t v;

		if (parse_num(poll, poll + strlen(poll), SSQ_EMU_STREAM_POLL_NS_MAX, &v))
			return bad("SSQ_EMU_POLL_NS", poll,
			           "want nanoseconds 0..100000, got", poll, strlen(poll));
		attr->stream_poll_ns = (uint32_t)v;
	}
	if (events) {
		if (strcmp(events, "0") && strcmp(events, "1"))
			return bad("SSQ_EMU_CQ_EVENTS", events, "want 0 or 1, got",
			           events, strlen(events));
		attr->no_cq_events = events[0] == '0';
	}
	return 0;
}
