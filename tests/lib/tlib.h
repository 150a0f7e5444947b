/* SPDX-License-Identifier: MIT */
/*
 * tests/lib: the fixtures many tests share, compiled once into a static
 * library that every test links (liburing's test/helpers.c) instead of a
 * copy in each test: one ssqd launcher, one connect that waits for it, one
 * two-daemon pair. Names start t_. A fixture says what failed on stderr and
 * returns it; the test's CHECK counts it.
 */
#ifndef SSQ_TEST_LIB_H
#define SSQ_TEST_LIB_H

#include <stdint.h>
#include <sys/types.h>
#include <ssq/client.h>

/*
 * t_free_tcp_port - a TCP port on 127.0.0.1 for a --listen, held for this
 * test (recv_flow.h's free_tcp_port says how). 0 if none could be had.
 */
uint16_t t_free_tcp_port(void);

/*
 * t_ssqd_exec - fork and exec the ssqd in $SSQD with @args (NULL-terminated,
 * after argv[0], at most 40), in the child @env_name set to @env_value
 * (unless @env_name is NULL) and stderr into the file @log (appended with
 * @append, else truncated; NULL: this process's stderr). Returns its pid,
 * or -1 when fork failed.
 */
pid_t t_ssqd_exec(const char *const *args, const char *env_name, const char *env_value,
                  const char *log, int append);

/*
 * t_rssqd_start - the ssqd the receive, wire and cluster tests run: on the
 * test's device at @sock, memfd pages, an 8 MiB data arena, 256-WQEBB send
 * queues, a receive pool of @recv_depth buffers of @recv_size bytes, then
 * @args (NULL-terminated, up to 24); SSQ_EMU_WIRE_FAULT set to @wire_fault
 * unless NULL; stderr as t_ssqd_exec's @log, @append. Returns its pid.
 */
pid_t t_rssqd_start(const char *sock, unsigned recv_depth, unsigned recv_size,
                    const char *wire_fault, const char *const *args, const char *log,
                    int append);

/*
 * t_ssqd_connect - a client of the ssqd at @sock, retrying while it starts
 * (up to 20 s on a loaded machine); an ssqd @pid that exits meanwhile (a
 * device it cannot open) ends the wait at once. NULL on failure.
 */
struct ssq_client *t_ssqd_connect(const char *sock, pid_t pid);

/*
 * Two daemons linked as a cluster of two, alice (index 0) and bob (1), each
 * --eager with --peer naming the other at 127.0.0.1 and --listen on a port
 * of its own: the set-up of the two-host tests.
 * t_pair_start - both started (t_rssqd_start with the tests' receive pool,
 *   @extra after the pair's own arguments, NULL for none), a client of
 *   each in c[], and q0 READY at both within 10 s. 0, or -1 (said why; call
 *   t_pair_stop all the same).
 * t_pair_restart - daemon @i killed (SIGKILL, its run ends with its
 *   clients' buffers), its client closed, and started again as before (the
 *   same arguments; @extra must still be there) with a new client in c[@i].
 *   0, or -1 (said why). Its q0 may not be READY yet.
 * t_pair_stop - the clients closed, both daemons stopped (SIGTERM, reaped)
 *   and their sockets removed.
 */
struct t_pair {
	char sock[2][108];
	char port[2][16];
	char peer[2][64];
	pid_t pid[2];
	struct ssq_client *c[2];
	unsigned recv_depth, recv_size;
	const char *const *extra;
};
int t_pair_start(struct t_pair *p, const char *tag, unsigned recv_depth,
                 unsigned recv_size, const char *const *extra);
int t_pair_restart(struct t_pair *p, int i);
void t_pair_stop(struct t_pair *p);

#endif
