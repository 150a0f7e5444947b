/* SPDX-License-Identifier: MIT */
/* Rate-limited log lines (util/util.h). */
#include <stdarg.h>
#include <stdio.h>
#include "ctrl/daemon/util/util.h"
#include <systemd/sd-daemon.h> /* SD_ERR...: util/log.c */

void ssqd_log_tick(struct ssqd_log_limit *l, uint64_t now_ns)
{
	if (now_ns - l->window_ns >= 1000000000ull) {
		if (l->dropped)
			fprintf(stderr,
			        SD_WARNING
			        "ssqd: %u more such lines left out in one second\n",
			        l->dropped);
		l->window_ns = now_ns;
		l->lines = 0;
		l->dropped = 0;
	}
}

void ssqd_log_limited(struct ssqd_log_limit *l, uint64_t now_ns, const char *fmt, ...)
{
	va_list ap;

	ssqd_log_tick(l, now_ns);
	if (l->lines >= SSQD_LOG_BURST) {
		l->dropped++;
		return;
	}
	l->lines++;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}
