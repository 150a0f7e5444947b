/* SPDX-License-Identifier: MIT */
/*
 * engine.c - a perftest-style tool's run: connect to ssqd (or start it,
 * daemons.c), the destination, perftest's banner, then per size its run
 * (size_run.c: the senders forked, started together, collected, the data
 * checked) and its row (report.c); two hosts through twohost_client.c, a
 * --server in twohost_server.c. Shaped after perftest
 * (linux-rdma/perftest); nothing calls back into this file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "engine.h"
#include "daemons.h"
#include "checks.h"
#include "report.h"
#include "size_run.h"
#include "twohost_server.h"
#include "twohost_client.h"
#include "twohost_queues.h"
#include "cluster.h"

/* --run_infinitely: SIGINT or SIGTERM came; finish and report (size_run.c). */
static void on_interrupt(int sig)
{
	(void)sig;
	pt_interrupted = 1;
}

/*
 * An ssqd with a peer (--listen / --connect) sends its queues' RDMA into
 * the peer's arena: only a two-host run (--server, or a server name) may
 * use it, and a two-host run needs one. 0, or -1 (said why).
 */
static int two_host_role(const struct pt_opts *o, struct ssq_client *c)
{
	int peer = ssq_client_peer_mode(c), role = o->server || o->peer_host || o->npeers;

	if (peer && !role) {
		fprintf(stderr,
		        "%s: ssqd at %s has a peer ssqd (--listen/--connect): its queues "
		        "write into the peer host's arena, where this run has nothing "
		        "allocated. Run two hosts like perftest: on the peer's host\n"
		        "  %s --ssq_socket=<its ssqd socket> --server [-p PORT] [flags]\n"
		        "and here\n"
		        "  %s --ssq_socket=%s [-p PORT] [flags] <peer host>\n"
		        "(or, on one host, no --ssq_socket: the tool starts its own "
		        "ssqd)\n",
		        o->tool, o->socket, o->tool, o->tool, o->socket);
		return -1;
	}
	if (!peer && role) {
		fprintf(stderr,
		        "%s: %s: ssqd at %s has no peer ssqd (it runs loopback): two "
		        "hosts need ssqd --listen PORT on one and --connect HOST:PORT "
		        "on the other\n",
		        o->tool,
		        o->server      ? "--server"
		        : o->peer_host ? o->peer_host
		                       : "--peers",
		        o->socket);
		return -1;
	}
	return 0;
}

/*
 * The banner's facts: the device's port (when this tool started ssqd on an
 * mlx5 device, so it knows the port: -i, else ssqd's 1), each queue's QPN
 * (ssqd's list), the peer's QPN of the queues open here (@q0, and a SEND
 * run's receive logs when they are @c's: attaching others just to ask
 * would cost ssqd a claim and a heal each), where the RDMA lands.
 */
static void run_info(const struct pt_opts *o, struct ssq_client *c,
                     const struct ssq_client *cd, struct ssq_queue *q0,
                     const struct pt_env *e, struct pt_info *in)
{
	struct ssq_queue_info qi[PT_MAX_LANES];
	char name[32];
	uint32_t i;
	int k, n = ssq_client_list(c, qi, PT_MAX_LANES);

	in->nq = pt_host_qps(o);
	for (i = 0; i < in->nq; i++) {
		pt_host_queue_name(o, i, name, sizeof(name));
		for (k = 0; k < n; k++)
			if (!strcmp(qi[k].name, name))
				in->qpn[i] = qi[k].qpn;
		if (i == 0)
			in->peer_qpn[i] = ssq_queue_peer_qpn(q0);
		else if (cd == c && e->nrq > i && e->rq[i])
			in->peer_qpn[i] = ssq_queue_peer_qpn(e->rq[i]);
	}
	in->rkey = e->rkey;
	in->vaddr = e->dst_iova;
	in->lid = -1;
	if (*in->emu_mode)
		in->why = "emulated device";
	else if (o->socket)
		in->why = "not exposed by ssqd";
	else
		pt_port_facts(in->dev, o->ib_port ? o->ib_port : 1, in);
}

/*
 * --peers FILE against a running ssqd: @o's peers that are @c's ssqd's
 * peers into @out (its own line, and names it does not know, left out,
 * saying so). 0, or -1 when none is left (said why).
 */
static int peers_of(const struct pt_opts *o, struct ssq_client *c, struct pt_opts *out)
{
	struct ssq_peer_info pi[PT_MAX_PEERS];
	int n = ssq_client_peers(c, pi, PT_MAX_PEERS), k;
	uint32_t i;

	*out = *o;
	out->npeers = 0;
	for (i = 0; i < o->npeers; i++) {
		for (k = 0;
		     k < n && k < (int)PT_MAX_PEERS && strcmp(pi[k].name, o->peers[i]);
		     k++)
			;
		if (k >= n || k >= (int)PT_MAX_PEERS) {
			printf("%s: --peers: %s is not a peer of the ssqd at %s (its own "
			       "line?): left out\n",
			       o->tool, o->peers[i], o->socket);
			continue;
		}
		memcpy(out->peers[out->npeers], o->peers[i], PT_PEER_NAME);
		memcpy(out->peer_srv[out->npeers], o->peer_srv[i], PT_SRV_HOST);
		out->peer_port[out->npeers++] = o->peer_port[i];
	}
	if (!out->npeers)
		fprintf(stderr, "%s: --peers: the file names no peer of the ssqd at %s\n",
		        o->tool, o->socket);
	return out->npeers ? 0 : -1;
}

/*
 * The senders' sources, @top bytes each, in the arena of the ssqd they
 * post on (at @sock): tried here, before the banner, each as a client of
 * its own as the senders are (ssqd's --max-client-mib is per client), so
 * that an ssqd whose data arena is too small for -s (-a: its top, 8 MiB)
 * is refused with what to give it, not halfway through the table. The
 * destination is allocated already.
 */
static int sources_fit(const struct pt_opts *o, const char *sock, uint32_t top)
{
	struct ssq_client *c[PT_MAX_PROCS] = { NULL };
	uint64_t mib = ((uint64_t)o->procs * top + (1u << 20) - 1) >> 20;
	struct ssq_buf b[PT_MAX_PROCS];
	int got[PT_MAX_PROCS] = { 0 };
	uint32_t i, n = 0;
	int rc = 0;

	for (n = 0; n < o->procs && !rc; n++) {
		rc = ssq_client_connect(sock, &c[n]);
		if (rc) {
			fprintf(stderr, "%s: %s\n", o->tool, ssq_client_strerror_last());
			break;
		}
		rc = ssq_buf_alloc(c[n], top < 8 ? 8 : top, &b[n]);
		got[n] = !rc;
		if (rc)
			fprintf(stderr, "%s: %s\n", o->tool, ssq_client_error(c[n]));
	}
	if (rc == -ENOMEM || rc == -EDQUOT)
		fprintf(stderr,
		        "%s: -s %u x %u sender%s need %llu MiB of the data arena of "
		        "the ssqd at %s, beside the destination: start it with a "
		        "larger %s (%llu, say), or lower -s%s\n",
		        o->tool, top, o->procs, o->procs > 1 ? "s" : "",
		        (unsigned long long)mib, sock,
		        rc == -ENOMEM ? "--data-mib" : "--max-client-mib",
		        (unsigned long long)(rc == -ENOMEM ? 2 * mib + 16 : 2 * mib),
		        o->all_sizes ? " (-a runs up to it)" : "");
	/* Freed before the senders allocate theirs (a close is seen later). */
	for (i = 0; i < n && i < o->procs; i++) {
		if (got[i] && ssq_buf_free(c[i], &b[i]) && !rc) {
			fprintf(stderr, "%s: %s\n", o->tool, ssq_client_error(c[i]));
			rc = -1;
		}
		if (c[i])
			ssq_client_close(c[i]);
	}
	return rc ? -1 : 0;
}

/*
 * perftest's server is the bare command: no --server, no server name,
 * nothing but the flags. Here that is also a one-host run (the tool
 * starts its own ssqd), so a bare command serves only when this host's
 * ssqd, at the default socket, has a peer (ssqd --listen or --connect):
 * then it is the server, on that ssqd, saying so. Returns 1 with @fo
 * the server's options, else 0 (run on one host, as before).
 */
static int bare_server(const struct pt_opts *o, struct pt_opts *fo)
{
	char path[sizeof(o->default_sock)];
	struct ssq_client *c;
	int peer;

	if (o->socket || o->server || o->peer_host || o->wire || o->npeers)
		return 0;
	pt_default_socket(path, sizeof(path));
	if (access(path, F_OK) || ssq_client_connect(path, &c))
		return 0;
	peer = ssq_client_peer_mode(c);
	ssq_client_close(c);
	if (peer != 1)
		return 0;
	*fo = *o;
	pt_become_server(fo);
	fprintf(stderr,
	        "%s: the ssqd at %s has a peer: serving its client on port %u, as "
	        "perftest's server\n",
	        fo->tool, fo->socket, fo->port);
	return 1;
}

int pt_main(const struct pt_opts *o)
{
	struct pt_daemon dl = { 0 }, dc = { 0 }, dp[PT_MAX_PEERS] = { 0 };
	struct pt_opts fo; /* --peers FILE: its peers of this ssqd */
	struct ssq_client *c = NULL, *cd = NULL, *cp[PT_MAX_PEERS] = { NULL };
	struct ssq_queue *q;
	struct ssq_queue_info qi[PT_MAX_LANES];
	struct ssq_buf dst;
	struct pt_env e = { 0 };
	struct pt_info in = { .dev = "emu", .emu_mode = "" };
	struct pt_row rows[24];
	struct pt_row local, rem = { 0 }; /* -b: this side's and the server's direction */
	char verdicts[24][PT_MAX_PEERS * 220];
	uint32_t sizes[24], nsizes = 0, s, top, need = pt_host_qps(o), k;
	int rc = 1, n, fail, moves;
	struct sigaction sa;

	signal(SIGPIPE, SIG_IGN);
	if (pt_output_start(o))
		return 1;
	if (o->run_inf) {
		/* No SA_RESTART: the sleeps between rows wake up. */
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_interrupt;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	pt_info_where(&in);
	e.th_fd = -1;
	if (bare_server(o, &fo))
		o = &fo;
	if (o->bidir && !o->server && !o->peer_host) {
		fprintf(stderr,
		        "%s: -b: bidirectional needs the far side to send as well: two "
		        "hosts (--server on one, the server's name on the other); on "
		        "one host ssq's loopback queue has one sending side\n",
		        o->tool);
		return 1;
	}
	if (o->socket) {
		if (ssq_client_connect(o->socket, &c)) {
			fprintf(stderr, "%s: ssqd at %s: %s\n", o->tool, o->socket,
			        ssq_client_strerror_last());
			/*
			 * Default ssqds serve: the server grants its
			 * destination to each of the client's queues
			 * (twohost_server.c).
			 */
			if (!strcmp(o->socket, o->default_sock))
				fprintf(stderr,
				        "%s: two hosts, as perftest's: this host's ssqd "
				        "at the default socket, linked to the server's "
				        "(ssqd --connect %s:PORT here, ssqd --listen "
				        "PORT there), or --ssq_socket=PATH\n",
				        o->tool, o->peer_host ? o->peer_host : "HOST");
			return 1;
		}
		cd = c;
		if (o->peers_file) {
			/* The file names this host's ssqd too: its peers only. */
			if (peers_of(o, c, &fo))
				goto out;
			o = &fo;
		}
		if (two_host_role(o, c))
			goto out;
		if (o->server) {
			rc = pt_th_server(o, c);
			goto out;
		}
		snprintf(in.dev, sizeof(in.dev), "%s", ssq_client_device(c));
		/*
		 * -d names the device the lab means to measure: a run against
		 * an ssqd on another one (the emulated device's memcpy, say)
		 * must not report as it.
		 */
		if (o->device && strcmp(o->device, in.dev)) {
			fprintf(stderr,
			        "%s: -d %s: the ssqd at %s runs on %s; start one with "
			        "--device %s, or drop -d\n",
			        o->tool, o->device, o->socket, in.dev, o->device);
			goto out;
		}
		printf("running on device %s (ssqd at %s)\n", in.dev, o->socket);
	} else if (o->npeers) {
		if (pt_start_cluster(o, &dc, &c, dp, cp))
			goto out;
		cd = c;
	} else if (pt_start_daemons(o, in.dev, sizeof(in.dev), &dl, &dc, &c, &cd)) {
		goto out;
	}
	if (!strcmp(in.dev, "emu"))
		in.emu_mode = getenv("SSQ_EMU_MODE") ? getenv("SSQ_EMU_MODE") : "full";
	/* read_lat and atomic_lat wait for the CQE, which sink mode writes. */
	if (pt_is_lat(o) && !pt_is_cqe_lat(o) && !strcasecmp(in.emu_mode, "sink")) {
		fprintf(stderr,
		        "%s: SSQ_EMU_MODE=sink moves no data, and %s waits for "
		        "the data to land: use full mode\n",
		        o->tool, o->tool + 4);
		goto out;
	}
	n = ssq_client_list(c, qi, PT_MAX_LANES);
	if (n < (int)need) {
		fprintf(stderr,
		        "%s: -P %u -q %u --mode %s needs queues q0..q%u; ssqd has %d\n",
		        o->tool, o->procs, o->qps, pt_mode_names[o->mode], need - 1, n);
		goto out;
	}
	top = pt_top_size(o);
	/* The emulated device's sink mode checks WQEs and moves nothing. */
	moves = strcmp(in.emu_mode, "sink") != 0;
	/* write_lat: a 64-byte aligned slot per sender, each watching its own. */
	e.slot = o->test == PT_WRITE_LAT ? (top + 63) & ~63u : 0;
	if (o->peer_host) {
		/* Two hosts: the destination is the server's, in its ssqd's arena. */
		if (ssq_queue_open(c, "q0", &q)) {
			fprintf(stderr, "%s: q0: %s\n", o->tool, ssq_client_error(c));
			goto out;
		}
		memset(&dst, 0, sizeof(dst));
		/*
		 * write_lat: the server WRITEs each sender's slot back into
		 * its slot of this buffer here, where the sender waits for it.
		 * send_lat: its echoes come to this ssqd's receive logs; the
		 * senders map a destination all the same (a small one here).
		 * -b: where the server's senders write (read, add) here.
		 */
		if ((e.slot || o->test == PT_SEND_LAT || o->bidir) &&
		    ssq_buf_alloc(c,
		                  e.slot     ? (uint64_t)e.slot * o->procs
		                  : o->bidir ? (top < 8 ? 8 : top)
		                             : 64,
		                  &dst)) {
			fprintf(stderr, "%s: %s\n", o->tool, ssq_client_error(c));
			goto out;
		}
		if (pt_th_client_open(o, c, "", q, top, moves,
		                      e.slot || o->bidir ? &dst : NULL, &e, e.qrkey[0]))
			goto out;
		e.rev = o->bidir && moves ? dst.addr : NULL;
		e.rev_len = dst.len;
		e.qgrants = 1;
		/* The WRITEs go to the server's buffer, at its descriptor. */
		dst.iova = dst.remote_addr = e.dst_iova;
		if (!e.slot && o->test != PT_SEND_LAT)
			dst.len = e.dst_len;
	} else if (o->npeers && o->socket) {
		/* A running cluster: each peer's server holds its destination. */
		if (pt_cl_open(o, c, top, moves, &e, &q, &dst))
			goto out;
	} else if (o->npeers) {
		if (pt_cl_local_open(o, c, cp, top, &e, &q, &dst))
			goto out;
	} else if (ssq_queue_open(c, "q0", &q) ||
	           ssq_buf_alloc(
	               cd, e.slot ? (uint64_t)e.slot * o->procs : (top < 8 ? 8 : top),
	               &dst)) {
		fprintf(stderr, "%s: %s\n", o->tool,
		        *ssq_client_error(c) ? ssq_client_error(c)
		                             : ssq_client_error(cd));
		goto out;
	} else if (o->wire) {
		/* The listener's qk, paired with the senders' qk, reaches it. */
		if (pt_th_grant_all(o, cd, "", &dst, e.qrkey[0]))
			goto out;
		e.qgrants = 1;
	}
	/* Two hosts: send_bw's SENDs are logged at the server; send_lat's echoes here. */
	/*
	 * ssq_send_bw's default size is perftest's, 64 KiB; a default ssqd's
	 * receive buffers take 4 KiB (--recv-size). Without -s, send what the
	 * receiving ssqd's buffers take, saying so.
	 */
	if (pt_is_send(o) && !o->size_given && !o->all_sizes && !o->peer_host &&
	    ssq_recv_depth(q) && ssq_recv_size(q) < o->size) {
		if (o != &fo) {
			fo = *o;
			o = &fo;
		}
		fprintf(stderr,
		        "%s: -s %u (the default) is more than the receiving ssqd's "
		        "%u-byte buffers (--recv-size): sending %u bytes; give -s "
		        "to choose\n",
		        o->tool, fo.size, ssq_recv_size(q), ssq_recv_size(q));
		fo.size = ssq_recv_size(q);
	}
	if (pt_is_send(o) && (!o->peer_host || o->test == PT_SEND_LAT) &&
	    pt_open_recv_logs(o, c, cd, q, &e))
		goto out;
	if (o->inline_size > ssq_queue_sq(q)->max_inline) {
		fprintf(stderr, "%s: -I %u: the QP takes at most %u inline bytes\n",
		        o->tool, o->inline_size, ssq_queue_sq(q)->max_inline);
		pt_usage(stderr, o);
		goto out;
	}
	if (sources_fit(o, o->socket ? o->socket : dc.sock, top))
		goto out;
	if (o->all_sizes && !pt_is_atomic(o))
		for (s = 2; s <= top; s *= 2)
			sizes[nsizes++] = s;
	else
		sizes[nsizes++] = o->size;
	e.socket = o->socket ? o->socket : dc.sock;
	e.dst_socket = o->socket ? o->socket : o->wire ? dl.sock : dc.sock;
	e.dst_off = dst.off;
	e.dst_len = dst.len;
	/*
	 * The destination's remote descriptor: a buffer of the destination
	 * daemon, its own key. Two hosts: the server's, as it sent it.
	 */
	e.dst_iova = dst.remote_addr;
	if (!o->peer_host)
		e.rkey = dst.rkey;
	e.dst = dst.addr;
	/*
	 * Two hosts: the server checks, after each size (pt_th_client_done);
	 * write_lat checks its pong slots here, which hold the server's echo.
	 */
	e.check_data =
	    (o->test == PT_WRITE_LAT || (o->test == PT_WRITE_BW && !o->peer_host)) &&
	    moves && !e.nsrv;
	e.check_recv = o->test == PT_SEND_BW && moves && !o->peer_host;
	printf("%s: %s, %u sender process%s, mode %s%s%s, %u QP%s%s%s\n", o->tool,
	       pt_is_read(o) ? "RDMA READ"
	       : pt_is_atomic(o)
	           ? (o->atomic_cas ? "ATOMIC compare-and-swap" : "ATOMIC fetch-and-add")
	       : pt_is_send(o) ? "SEND"
	                       : "RDMA WRITE",
	       o->procs, o->procs > 1 ? "es" : "", pt_mode_names[o->mode],
	       o->mode == PT_PROXY ? " (+1 proxy process)" : "",
	       *in.emu_mode ? (strcmp(in.emu_mode, "sink") ? "" : ", device in sink mode")
	                    : "",
	       need, need > 1 ? "s" : "",
	       o->wire || o->npeers ? ", over the emulated wire" : "",
	       e.nsrv          ? ", to each peer's server's arena through the peer ssqd"
	       : !o->peer_host ? ""
	       : o->test == PT_SEND_BW
	           ? ", into the server's receive pool through the peer ssqd"
	       : pt_is_lat(o) && !pt_is_cqe_lat(o)
	           ? (o->test == PT_SEND_LAT
	                  ? ", ping-pong: the server SENDs each back (times are "
	                    "RTT/2, as perftest's)"
	                  : ", ping-pong: the server WRITEs each back (times are "
	                    "RTT/2, as perftest's)")
	           : ", to the server's arena through the peer ssqd");
	run_info(o, c, cd, q, &e, &in);
	/*
	 * -m: an emulated ssqd this tool started runs at it (--emu-mtu);
	 * another ssqd's port must have it, which a client sees on a
	 * ConnectX (ibv_query_port) and not on the emulated device.
	 */
	if (o->mtu && !o->socket && !strcmp(in.dev, "emu")) {
		in.mtu = o->mtu;
	} else if (o->mtu && in.mtu != o->mtu) {
		if (in.mtu)
			fprintf(stderr,
			        "%s: -m %u: the QPs run at %u bytes, the port's "
			        "active MTU\n",
			        o->tool, o->mtu, in.mtu);
		else
			fprintf(stderr,
			        "%s: -m %u: the MTU of the ssqd at %s cannot be seen "
			        "from here (%s): start it with --emu-mtu %u, or drop "
			        "-m\n",
			        o->tool, o->mtu, o->socket ? o->socket : in.dev,
			        in.why ? in.why : "unknown", o->mtu);
		goto out;
	}
	pt_print_banner(o, &in);
	if (o->run_inf || o->no_peak)
		printf(" WARNING: BW peak won't be measured in this run.\n");
	pt_print_header(o);
	for (s = 0; s < nsizes; s++) {
		if ((e.th_fd >= 0 && pt_th_client_start(o, &e, sizes[s])) ||
		    (e.nsrv && pt_cl_start(o, &e, sizes[s])))
			goto out;
		fail = pt_run_size(o, &e, &in, sizes[s], &rows[s]);
		/* -b: the row is both directions', once the server has said its. */
		if (!fail && !o->run_inf && !o->bidir)
			pt_print_row(o, &rows[s]);
		if (e.th_fd >= 0 &&
		    pt_th_client_done(o, &e, sizes[s], fail ? 0 : rows[s].iters, !fail,
		                      &rem, verdicts[s], sizeof(verdicts[s]))) {
			if (!fail)
				fprintf(stderr, "%s\n", verdicts[s]);
			goto out;
		}
		if (e.nsrv && pt_cl_done(o, &e, sizes[s], !fail, verdicts[s],
		                         sizeof(verdicts[s]))) {
			if (!fail)
				fprintf(stderr, "%s\n", verdicts[s]);
			goto out;
		}
		if (fail)
			goto out;
		if (o->bidir) {
			local = rows[s];
			pt_bidir_sum(&rows[s], &rem);
			pt_print_row(o, &rows[s]);
			/* perftest splits them for one size only, not with -a. */
			if (o->report_both && !o->all_sizes)
				pt_print_report_both(o, &local, &rem);
		}
	}
	pt_print_row(o, NULL);
	if (o->queue_pick)
		printf(" Queue pick      : senders on %s\n", e.picked);
	/* The server's verdicts after the table, which stays perftest's. */
	for (s = 0; (e.th_fd >= 0 || e.nsrv) && s < nsizes; s++)
		printf("%s\n", verdicts[s]);
	/* --run_infinitely wrote its files with each row. */
	rc = !o->run_inf && ((o->json && pt_write_json(o, &in, rows, nsizes)) ||
	                     (o->out_json && pt_write_out_json(o, &in, rows, nsizes)));
	pt_th_client_close(o, &e);
	pt_cl_close(o, &e, 1);
out:
	pt_cl_close(o, &e, 0);
	if (e.th_fd >= 0)
		close(e.th_fd); /* no BYE: the server must not take this for success */
	if (cd && cd != c)
		ssq_client_close(cd);
	for (k = 0; k < o->npeers; k++)
		if (cp[k])
			ssq_client_close(cp[k]);
	if (c)
		ssq_client_close(c);
	/* The sender's side first: the listener would wait for it otherwise. */
	pt_ssqd_stop(&dc);
	pt_ssqd_stop(&dl);
	for (k = 0; k < o->npeers; k++)
		pt_ssqd_stop(&dp[k]);
	return rc;
}
