/* SPDX-License-Identifier: MIT */
/* TCP ports for a test's ssqd to listen on, held against every other test (tlib.h). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include "tlib.h"

/* Can a TCP socket bind 127.0.0.1:@port just now (as ssqd's listener does)? */
static int tcp_port_bindable(uint16_t port)
{
	struct sockaddr_in sa;
	int one = 1, s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(port);
	ok = s >= 0 && !setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) &&
	     !bind(s, (struct sockaddr *)&sa, sizeof(sa));
	if (s >= 0)
		close(s);
	return ok;
}

/*
 * Hold TCP port @port for this test: a lock on a file named after it, kept
 * open for the process's life (the kernel lets go at its exit, however it
 * ends). Returns the lock's descriptor; -1 if another test holds the port;
 * -2 if no lock can be had here (then only the bind check guards it).
 */
static int tcp_port_hold(uint16_t port)
{
	char path[64];
	int fd;

	(void)!mkdir("/tmp/ssq-test-ports", 01777);
	snprintf(path, sizeof(path), "/tmp/ssq-test-ports/%u", port);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		return -2;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * A TCP port on 127.0.0.1 for a --listen, nobody's but this test's. Below
 * the kernel's ephemeral range (ip_local_port_range): a port the kernel
 * picked would go back to its pool, where any other test's outgoing
 * connection (a dial) may take it before ssqd binds it. Tests run side by
 * side and a free port stays unbound until this test's ssqd starts (and
 * again while it restarts): each port handed out is held (tcp_port_hold)
 * until the test ends, and skipped by every other test's free_tcp_port.
 * From a random start per process, then on up, so one test's ports
 * differ. Returns 0 if none could be had.
 */
uint16_t t_free_tcp_port(void)
{
	static unsigned next;
	unsigned lo = 32768, hi, tries;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (f) {
		if (fscanf(f, "%u %u", &lo, &hi) != 2)
			lo = 32768;
		fclose(f);
	}
	if (lo <= 11024)
		lo = 65536; /* the range starts low: above it instead */
	hi = lo == 65536 ? 65535 : lo - 1;
	lo = lo == 65536 ? 61000 : 10000;
	if (!next)
		next = (unsigned)getpid() * 7919u + (unsigned)time(NULL);
	for (tries = 0; tries < hi - lo; tries++) {
		uint16_t port = (uint16_t)(lo + next++ % (hi - lo + 1));

		int held = tcp_port_hold(port);

		if (held == -1)
			continue;
		if (tcp_port_bindable(port))
			return port;
		if (held >= 0)
			close(held);
	}
	return 0;
}

int t_tcp_connect(int s, uint16_t port)
{
	struct sockaddr_in sa;

	if (s < 0)
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		close(s);
		return -1;
	}
	return s;
}
