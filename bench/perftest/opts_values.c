/* SPDX-License-Identifier: MIT */
/*
 * opts_values.c - a flag's value read and checked: numbers in a range,
 * the results files' paths, --peers' list or file; and the one way a bad
 * flag ends the run (pt_bad_flag: says which, the usage, exit 1).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "opts_values.h"

void pt_bad_flag(const struct pt_opts *o, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", o->tool);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	pt_usage(stderr, o);
	exit(1);
}

uint64_t pt_flag_num(const struct pt_opts *o, const char *flag, const char *s,
                     uint64_t lo, uint64_t hi)
{
	char *end, range[64];
	unsigned long long v;

	/* Digits only: strtoull alone takes "+5", " 5" and "-1" (as 2^64 - 1). */
	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || s[strspn(s, "0123456789")] || *end || errno || v < lo || v > hi) {
		snprintf(range, sizeof(range), "%llu..%llu", (unsigned long long)lo,
		         (unsigned long long)hi);
		fprintf(stderr, "%s: %s '%s': want %s\n", o->tool, flag, s, range);
		pt_usage(stderr, o);
		exit(1);
	}
	return v;
}

/*
 * The results go to @path (--json, --out_json_file) at the end of the run:
 * a name that cannot be written there is refused now, not after the run
 * it would have recorded.
 */
void pt_check_out_path(const struct pt_opts *o, const char *flag, const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096], msg[4200];
	struct stat st;
	int err = 0;

	if (!*path)
		pt_bad_flag(o, "%s: an empty file name", flag);
	if (!stat(path, &st)) {
		if (S_ISDIR(st.st_mode))
			err = EISDIR;
		else if (access(path, W_OK))
			err = errno;
	} else if (errno != ENOENT) {
		err = errno;
	} else {
		if (!slash)
			snprintf(dir, sizeof(dir), ".");
		else
			snprintf(dir, sizeof(dir), "%.*s",
			         slash == path ? 1 : (int)(slash - path), path);
		if (access(dir, W_OK | X_OK))
			err = errno;
	}
	if (!err)
		return;
	snprintf(msg, sizeof(msg), "'%s': cannot write the results there (%s)", path,
	         strerror(err));
	pt_bad_flag(o, "%s %s", flag, msg);
}

/* The flag getopt stopped at: -c for a short one, else the word itself. */
const char *pt_flag_name(char *buf, const char *word)
{
	if (optopt > 0 && optopt < 128 && !(word[0] == '-' && word[1] == '-')) {
		buf[1] = (char)optopt;
		return buf;
	}
	return word;
}

/*
 * One --peers entry's "@HOST[:PORT]", where its server runs, into peer
 * @k. 0 or -1 (@why says what was wrong).
 */
static int parse_srv(struct pt_opts *o, uint32_t k, const char *at, size_t w, char *why,
                     size_t len)
{
	const char *colon = memchr(at, ':', w);
	size_t hw = colon ? (size_t)(colon - at) : w, i;
	unsigned long port = 0;

	for (i = colon ? hw + 1 : w; i < w; i++)
		port = at[i] >= '0' && at[i] <= '9' && port < 65536
		           ? port * 10 + (unsigned long)(at[i] - '0')
		           : 65536;
	if (hw < 1 || hw >= PT_SRV_HOST || memchr(at, '@', w) ||
	    (colon && (w == hw + 1 || port < 1 || port > 65535))) {
		snprintf(why, len,
		         "'%s@%.*s': want NAME@HOST or NAME@HOST:PORT (1..65535)",
		         o->peers[k], (int)w, at);
		return -1;
	}
	memcpy(o->peer_srv[k], at, hw);
	o->peer_srv[k][hw] = 0;
	o->peer_port[k] = (uint16_t)port;
	return 0;
}

/*
 * --peers FILE: a cluster's peers file, as ssqd reads it (NAME HOST:PORT a
 * line, # comments): into "NAME@HOST,..." in @list (HOST: where the
 * peer's server runs, with --ssq_socket; -p its port). 0 or -1 (@why).
 */
static int peers_file(const char *path, char *list, size_t size, char *why, size_t len)
{
	char line[512], name[64], addr[256], extra[2], *hash, *colon;
	size_t at = 0;
	unsigned no = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		snprintf(why, len, "%s", strerror(errno));
		return -1;
	}
	list[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		int n;

		no++;
		hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		n = sscanf(line, "%63s %255s %1s", name, addr, extra);
		if (n <= 0)
			continue;
		colon = n == 2 ? strrchr(addr, ':') : NULL;
		if (!colon || colon == addr) {
			snprintf(why, len, "line %u: want NAME HOST:PORT", no);
			fclose(f);
			return -1;
		}
		*colon = 0;
		n = snprintf(list + at, size - at, "%s%s@%s", at ? "," : "", name, addr);
		if (n < 0 || (size_t)n >= size - at) {
			snprintf(why, len, "line %u: more peers than a run takes", no);
			fclose(f);
			return -1;
		}
		at += (size_t)n;
	}
	fclose(f);
	if (!at) {
		snprintf(why, len, "names no peer");
		return -1;
	}
	return 0;
}

/*
 * --peers LIST: a count N (peers named peer1..peerN) or names separated by
 * commas, each as ssqd takes a peer's name (1..23 of A-Z a-z 0-9 . _ -),
 * none twice and none "here", the sending ssqd's name; a name may say
 * where its server runs (NAME@HOST[:PORT], with --ssq_socket).
 */
int pt_parse_peers(struct pt_opts *o, const char *list, char *why, size_t len)
{
	const char *p = list, *end, *at;
	char *stop;
	unsigned long n;
	size_t w, i, full;
	uint32_t k;

	if (strchr(list, '/') || access(list, F_OK) == 0) {
		char names[PT_MAX_PEERS * 2 * 300];

		if (peers_file(list, names, sizeof(names), why, len))
			return -1;
		o->peers_file = 1;
		return pt_parse_peers(o, names, why, len);
	}
	n = strtoul(list, &stop, 10);
	if (*list >= '0' && *list <= '9' && !*stop) {
		if (n < 1 || n > PT_MAX_PEERS) {
			snprintf(why, len, "want 1..%u peers", PT_MAX_PEERS);
			return -1;
		}
		o->peers_counted = 1;
		for (o->npeers = 0; o->npeers < n; o->npeers++)
			snprintf(o->peers[o->npeers], PT_PEER_NAME, "peer%u",
			         o->npeers + 1);
		return 0;
	}
	/*
	 * A signed count ("-1", "+3") is a mistaken count, not a name, though
	 * '-' is a name's character: "-1" ran with one peer named "-1".
	 */
	if ((*list == '-' || *list == '+') && list[1] &&
	    strspn(list + 1, "0123456789") == strlen(list + 1)) {
		snprintf(why, len, "want 1..%u peers", PT_MAX_PEERS);
		return -1;
	}
	if (!*list) {
		snprintf(why, len, "an empty list: want N, NAME,... or a peers file");
		return -1;
	}
	for (o->npeers = 0; *p; p = *end ? end + 1 : end) {
		end = strchr(p, ',');
		end = end ? end : p + strlen(p);
		full = (size_t)(end - p);
		at = memchr(p, '@', full);
		w = at ? (size_t)(at - p) : full;
		if (o->npeers == PT_MAX_PEERS) {
			snprintf(why, len, "more than %u peers", PT_MAX_PEERS);
			return -1;
		}
		if (w < 1 || w >= PT_PEER_NAME) {
			snprintf(why, len, "a name of %zu characters: want 1..%u", w,
			         PT_PEER_NAME - 1);
			return -1;
		}
		for (i = 0; i < w; i++)
			if (!isalnum((unsigned char)p[i]) && !strchr("._-", p[i])) {
				snprintf(why, len, "'%.*s': want A-Z a-z 0-9 . _ -",
				         (int)w, p);
				return -1;
			}
		memcpy(o->peers[o->npeers], p, w);
		o->peers[o->npeers][w] = 0;
		if (at && parse_srv(o, o->npeers, at + 1, full - w - 1, why, len))
			return -1;
		if (!strcmp(o->peers[o->npeers], "here")) {
			snprintf(why, len, "'here' is the sending ssqd's own name");
			return -1;
		}
		for (k = 0; k < o->npeers; k++)
			if (!strcmp(o->peers[k], o->peers[o->npeers])) {
				snprintf(why, len, "%s named twice", o->peers[k]);
				return -1;
			}
		o->npeers++;
		if (*end && !end[1]) {
			snprintf(why, len, "a trailing comma");
			return -1;
		}
	}
	return 0;
}
