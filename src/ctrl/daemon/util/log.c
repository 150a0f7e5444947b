/* SPDX-License-Identifier: MIT */
/*
 * ssqd's log (util/util.h): every line ssqd writes to stderr passes here,
 * through a stdio cookie stream put in stderr's place, one write(2) per
 * line. A line may start with sd-daemon(3)'s level prefix (SD_ERR "<3>",
 * SD_WARNING "<4>", SD_NOTICE "<5>", SD_INFO "<6>", SD_DEBUG "<7>"); one
 * without is SD_INFO. Lines above --log-level are left out. Then:
 *  - under journald (stderr is the stream systemd.exec(5) names in
 *    $JOURNAL_STREAM, "DEVICE:INODE"), the "<N>" goes out as it is:
 *    journald reads it as the line's priority and stamps the time itself
 *    (systemd journald.conf(5), "stream" transport; sd-daemon(3));
 *  - else the "<N>" is dropped and the line starts with the local time,
 *    to the microsecond, and for warnings and errors the level's name,
 *    so a log run by hand lines up with its clients' output.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <systemd/sd-daemon.h>
#include "ctrl/daemon/util/util.h"

static struct {
	int fd;       /* the real stderr */
	int level;    /* the highest level written */
	int journald; /* stderr is journald's stream */
	char line[4096];
	size_t len;   /* bytes of the line under way */
	char who[40]; /* ssqd_log_who's, or "" */
} lg = { .fd = 2, .level = SSQD_LOG_DEFAULT, .journald = 0 };

void ssqd_log_who(const char *who)
{
	snprintf(lg.who, sizeof(lg.who), "%s", who);
}

static const char *const names[] = { "emerg",   "alert",  "crit", "err",
	                             "warning", "notice", "info", "debug" };

int ssqd_log_level_parse(const char *s)
{
	int i;

	if (s[0] >= '0' && s[0] <= '7' && !s[1])
		return s[0] - '0';
	for (i = 0; i < 8; i++)
		if (!strcasecmp(s, names[i]))
			return i;
	if (!strcasecmp(s, "error"))
		return 3;
	if (!strcasecmp(s, "warn"))
		return 4;
	return -1;
}

/* systemd.exec(5): JOURNAL_STREAM is "DEV:INO" of the stream stderr is. */
int ssqd_log_under_journald(int fd)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(fd, &st))
		return 0;
	return (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

static void write_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(lg.fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* nowhere to say it */
		p += w;
		n -= (size_t)w;
	}
}

/* One whole line, @n bytes with its '\n'. */
static void emit(const char *s, size_t n)
{
	char out[sizeof(lg.line) + 96];
	int level = SD_INFO[1] - '0';
	size_t h = 0;

	if (n >= 3 && s[0] == '<' && s[1] >= '0' && s[1] <= '7' && s[2] == '>') {
		level = s[1] - '0';
		s += 3;
		n -= 3;
	}
	if (level > lg.level)
		return;
	if (lg.journald) {
		h = (size_t)snprintf(out, sizeof(out), "<%d>", level);
	} else {
		struct timeval tv;
		struct tm tm;

		gettimeofday(&tv, NULL);
		localtime_r(&tv.tv_sec, &tm);
		h = strftime(out, sizeof(out), "%Y-%m-%dT%H:%M:%S", &tm);
		h += (size_t)snprintf(out + h, sizeof(out) - h, ".%06ld ",
		                      (long)tv.tv_usec);
		if (level <= 4)
			h += (size_t)snprintf(out + h, sizeof(out) - h,
			                      "%s: ", level <= 3 ? "error" : "warning");
	}
	/*
	 * A tenant's ssqd shares its parent's stderr: its lines say whose
	 * they are where they say "ssqd: ".
	 */
	if (lg.who[0] && n >= 6 && !memcmp(s, "ssqd: ", 6)) {
		h += (size_t)snprintf(out + h, sizeof(out) - h, "ssqd (%s): ", lg.who);
		s += 6;
		n -= 6;
	}
	if (n > sizeof(out) - h)
		n = sizeof(out) - h;
	memcpy(out + h, s, n);
	write_all(out, h + n);
}

/*
 * The cookie stream's write: called under stderr's own lock (glibc's
 * _IO_flockfile around each fprintf), so lg.line needs none of its own.
 */
static ssize_t cookie_write(void *cookie, const char *buf, size_t size)
{
	size_t i, done = 0;

	(void)cookie;
	for (i = 0; i < size; i++) {
		if (buf[i] != '\n')
			continue;
		if (lg.len) { /* the line's start came in an earlier write */
			size_t k = i + 1 - done;

			if (k > sizeof(lg.line) - lg.len)
				k = sizeof(lg.line) - lg.len;
			memcpy(lg.line + lg.len, buf + done, k);
			emit(lg.line, lg.len + k);
			lg.len = 0;
		} else {
			emit(buf + done, i + 1 - done);
		}
		done = i + 1;
	}
	if (done < size) { /* a line not ended yet: kept, cut at the buffer */
		size_t k = size - done;

		if (k > sizeof(lg.line) - 1 - lg.len)
			k = sizeof(lg.line) - 1 - lg.len;
		memcpy(lg.line + lg.len, buf + done, k);
		lg.len += k;
	}
	return (ssize_t)size;
}

int ssqd_log_setup(int level)
{
	cookie_io_functions_t io = { .write = cookie_write };
	FILE *f;

	lg.level = level;
	lg.journald = ssqd_log_under_journald(2);
	fflush(stderr);
	f = fopencookie(NULL, "w", io);
	if (!f)
		return -errno;
	/* Line buffered: each line reaches write(2) when its '\n' is written. */
	setvbuf(f, NULL, _IOLBF, sizeof(lg.line));
	stderr = f;
	return 0;
}
