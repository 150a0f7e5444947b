/* SPDX-License-Identifier: MIT */
/*
 * opts_checks.c - the checks between the perftest-style tools' flags, once
 * all are read: what goes together, what a server refuses, what perftest
 * refuses (-b in a latency test), and the defaults that follow (-o lowers
 * -t, atomics are 8 bytes, --run_infinitely's -D); with them the default
 * socket a two-host run looks for, and a bare command turned server.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "opts_values.h"
#include "opts_checks.h"

/* --peers: what it goes with. */
static void check_peers(struct pt_opts *o, int s_given, const char *role)
{
	uint32_t k;

	if (role)
		pt_bad_flag(o,
		            "--peers with %s: the client names its servers in --peers "
		            "(NAME@HOST[:PORT]); a server finds its queue to the client "
		            "by the client's QPN",
		            o->server ? "--server" : o->peer_host);
	for (k = 0; !s_given && o->peers_file && k < o->npeers; k++)
		o->peer_srv[k][0] = 0; /* the tool's own cluster: names only */
	for (k = 0; !s_given && k < o->npeers; k++)
		if (o->peer_srv[k][0])
			pt_bad_flag(o,
			            "--peers %s@...: where a peer's server runs is for a "
			            "running cluster (--ssq_socket)%s",
			            o->peers[k], "");
	if (s_given && o->peers_counted)
		pt_bad_flag(o, "--peers N with --ssq_socket: name the running cluster's "
		               "peers (NAME[@HOST[:PORT]],...)");
	if (o->wire)
		pt_bad_flag(o, "--peers with --wire: one or the other");
	if (!s_given && o->device && strcmp(o->device, "emu"))
		pt_bad_flag(o,
		            "-d %s: --peers without --ssq_socket runs on the emulated "
		            "device's wire (-d emu)",
		            o->device);
	if (o->test != PT_WRITE_BW && o->test != PT_READ_BW && o->test != PT_ATOMIC_BW)
		pt_bad_flag(o,
		            "--peers with %s: ssq_write_bw, ssq_read_bw and "
		            "ssq_atomic_bw spread over peers",
		            o->tool);
	if (pt_host_qps(o) > PT_MAX_LANES)
		pt_bad_flag(o,
		            "queues %u x %u peers = %u, more than ssqd's %u "
		            "(qp-per-process: -P x -q per peer)",
		            pt_queues_needed(o), o->npeers, pt_host_qps(o), PT_MAX_LANES);
	if (!s_given)
		o->socket = NULL; /* not $SSQ_SOCKET either: the tool starts them */
}

/*
 * What a server refuses (--server, or a bare command: pt_become_server),
 * and what it takes without a meaning: the results files, which the client
 * writes (perftest's passive side of a WRITE or READ test writes none, and
 * a lab gives both sides the same flags).
 */
static void server_checks(struct pt_opts *o)
{
	if (!o->server)
		return;
	if (o->json || o->out_json) {
		fprintf(stderr, "%s: %s on the server: the client writes the results\n",
		        o->tool, o->json ? "--json" : "--out_json");
		o->json = o->out_json = NULL;
	}
	if (o->events)
		pt_bad_flag(o, "-e: the server echoes by polling; give -e to the client");
	if (o->atomic_cas)
		pt_bad_flag(o, "-A CMP_AND_SWAP with --server: the server checks its "
		               "counter by the fetch-and-adds it took");
	if (o->run_inf)
		pt_bad_flag(o, "--run_infinitely: one host only (not with --server or a "
		               "server name)");
	if (o->gid_index >= 0 || o->ib_port)
		pt_bad_flag(o,
		            "%s: the ssqd at %s set up its QPs already: start that ssqd "
		            "with --gid-index / --ib-port",
		            o->gid_index >= 0 ? "-x" : "-i", o->socket);
}

void pt_become_server(struct pt_opts *o)
{
	o->server = 1;
	pt_default_socket(o->default_sock, sizeof(o->default_sock));
	o->socket = o->default_sock;
	server_checks(o);
}

/*
 * As the library's clients look (src/ctrl/proto/socket_path.c,
 * proto_default_socket), less $SSQ_SOCKET, which pt_parse took already.
 */
void pt_default_socket(char *out, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (xdg && *xdg)
		snprintf(out, len, "%s/ssqd.sock", xdg);
	else if (getuid() == 0)
		snprintf(out, len, "/run/ssqd/ssqd.sock");
	else
		snprintf(out, len, "/tmp/ssqd-%u/ssqd.sock", (unsigned)getuid());
}

/*
 * -b: both sides send (perftest's duplex). Only two hosts have a second
 * side: the server runs the client's senders' twins on its own ssqd into a
 * buffer the client grants it (twohost_server.c). perftest refuses -b in its
 * latency tests ("Bidirectional is only available in BW test",
 * src/perftest_parameters.c, parser_perftest). Whether there is a second
 * side is known once a bare command has looked for its ssqd (engine.c).
 */
static void check_bidir(struct pt_opts *o)
{
	if (!o->bidir)
		return;
	if (pt_is_lat(o))
		pt_bad_flag(o, "-b: bidirectional is only available in the BW tools (as "
		               "perftest's)");
	if (o->test == PT_SEND_BW)
		pt_bad_flag(o, "-b with ssq_send_bw: the SENDs back would land in this "
		               "ssqd's receive pool, which nothing checks yet; "
		               "ssq_write_bw, ssq_read_bw and ssq_atomic_bw take -b");
}

/*
 * --queue-pick: senders that share the -q queues (lockfree, spinlock,
 * combine), on one host's ssqd and its own queues, one message stream each
 * (the bandwidth tools: a latency test has one message in flight).
 */
static void check_queue_pick(struct pt_opts *o, const char *role)
{
	if (!o->queue_pick)
		return;
	if (o->mode == PT_QP_PER_PROCESS || o->mode == PT_PROXY)
		pt_bad_flag(o,
		            "--queue-pick with --mode %s: its senders share no queue "
		            "(lockfree, spinlock and combine do)",
		            pt_mode_names[o->mode]);
	if (o->npeers)
		pt_bad_flag(o, "--queue-pick with --peers: each sender spreads over the "
		               "peers itself");
	if (role)
		pt_bad_flag(o,
		            "--queue-pick with %s: one host's ssqd picks (not two hosts)",
		            role);
	if (pt_is_lat(o))
		pt_bad_flag(o, "--queue-pick: the bandwidth tools only (a latency test "
		               "has one message in flight)");
}

/* The checks between flags, once all are read. */
void pt_check_combinations(struct pt_opts *o, int s_given, int q_given, int n_given)
{
	const char *role = o->server ? "--server" : o->peer_host;

	if (o->server && o->peer_host)
		pt_bad_flag(o, "--server with a server name (%s): one role per side",
		            o->peer_host);
	if (role && o->wire)
		pt_bad_flag(o,
		            "%s: --wire is two ssqd on this host; two hosts need no "
		            "--wire",
		            role);
	/* perftest's two hosts: this host's ssqd, where its clients look. */
	if (role && !o->socket && !o->wire) {
		pt_default_socket(o->default_sock, sizeof(o->default_sock));
		o->socket = o->default_sock;
	}
	server_checks(o);
	check_bidir(o);
	check_queue_pick(o, role);
	if (o->mode == PT_QP_PER_PROCESS && o->procs * o->qps > PT_MAX_LANES)
		pt_bad_flag(o,
		            "-P x -q = %u queues with --mode qp-per-process: ssqd has at "
		            "most %u",
		            o->procs * o->qps, PT_MAX_LANES);
	if (o->npeers)
		check_peers(o, s_given, role);
	if (o->wire && s_given)
		pt_bad_flag(o,
		            "--ssq_socket: --wire starts its own two ssqd; a running one "
		            "cannot be used");
	if (o->wire && o->device && strcmp(o->device, "emu"))
		pt_bad_flag(o,
		            "-d %s: --wire runs on the emulated device's wire (-d emu)",
		            o->device);
	if (o->wire)
		o->socket = NULL; /* not $SSQ_SOCKET either */
	if (o->sl)
		pt_bad_flag(
		    o,
		    "-S %u: ssqd sets up every QP with service level 0 (it has no "
		    "SL setting); only -S 0 runs",
		    o->sl);
	if (o->socket && (o->gid_index >= 0 || o->ib_port))
		pt_bad_flag(o,
		            "%s: the ssqd at --ssq_socket (or $SSQ_SOCKET) set up its "
		            "QPs already: start that ssqd with --gid-index / --ib-port",
		            o->gid_index >= 0 ? "-x" : "-i");
	if (o->socket && o->qp_timeout >= 0)
		pt_bad_flag(o,
		            "-u %d: the ssqd at %s set up its QPs already: start that "
		            "ssqd with --qp-timeout %d",
		            o->qp_timeout, o->socket, o->qp_timeout);
	/* -o: no sender keeps more READs (atomics) in flight than that. */
	if (o->out_reads && o->out_reads < o->tx_depth) {
		o->tx_depth = o->out_reads;
		if (o->cq_mod > o->tx_depth)
			o->cq_mod = o->tx_depth;
	}
	if (o->atomic_cas && role)
		pt_bad_flag(o,
		            "-A CMP_AND_SWAP with %s: the server checks its counter "
		            "by the fetch-and-adds it took",
		            role);
	if (!q_given && o->cq_mod > o->tx_depth)
		o->cq_mod = o->tx_depth; /* perftest lowers its default too */
	if (o->cq_mod > o->tx_depth)
		pt_bad_flag(o,
		            "-Q %u: more than the tx depth (-t): it would never complete",
		            o->cq_mod);
	if (o->post_list > o->tx_depth)
		pt_bad_flag(o, "-l %u: a post list longer than the tx depth (-t)",
		            o->post_list);
	if (pt_is_atomic(o))
		o->size = 8; /* perftest: atomics are 8 bytes, -s ignored */
	if (o->inline_size && (pt_is_read(o) || pt_is_atomic(o)))
		pt_bad_flag(o, "-I: READ and atomics cannot be inline");
	if (o->test == PT_SEND_LAT && o->procs > 1 && o->size < 2)
		pt_bad_flag(
		    o,
		    "-s 1 with -P > 1: a 1-byte SEND cannot say whose it is (-s >= 2)");
	if (o->events && pt_is_lat(o) && o->test != PT_SEND_LAT)
		pt_bad_flag(o,
		            "-e: a latency test times one message at a time by polling; "
		            "ssq_send_lat sleeps (ssq_recv_wait), the bandwidth tools "
		            "too (ssq_wait)");
	if (o->events && !pt_is_lat(o) && o->mode != PT_LOCKFREE &&
	    o->mode != PT_QP_PER_PROCESS && o->mode != PT_COMBINE)
		pt_bad_flag(o, "-e: only lockfree and qp-per-process senders sleep "
		               "(ssq_wait; combine too); spinlock and proxy poll");
	if (o->iters > 10000000 && pt_is_lat(o))
		pt_bad_flag(o, "-n: latency tests keep every sample: at most 10000000");
	if (!o->run_inf)
		return;
	/* perftest's own limits on --run_infinitely, and this tool's. */
	if (pt_is_lat(o))
		pt_bad_flag(o, "--run_infinitely: bandwidth tools only (as perftest's)");
	if (o->all_sizes)
		pt_bad_flag(o, "--run_infinitely: one size at a time (not with -a)");
	if (role)
		pt_bad_flag(o, "--run_infinitely: one host only (not with --server or a "
		               "server name)");
	if (n_given)
		pt_bad_flag(o,
		            "--run_infinitely: runs until interrupted, a line every -D "
		            "seconds; -n does not apply");
	if (o->duration == 0)
		o->duration = PT_INF_DURATION;
}
