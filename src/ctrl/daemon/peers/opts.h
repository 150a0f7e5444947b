/* SPDX-License-Identifier: MIT */
/*
 * A cluster's options: --name, --peer NAME=HOST:PORT and --peers FILE (one
 * "NAME HOST:PORT" a line, '#' comments: the hostfile convention of MPI
 * launchers, this daemon's own line giving it loopback queues). Each returns 0 or
 * -EINVAL with a sentence naming what was wrong in @why.
 */
#ifndef SSQ_CTRL_DAEMON_PEER_OPTS_H
#define SSQ_CTRL_DAEMON_PEER_OPTS_H

#include <stddef.h>
#include "ctrl/daemon/daemon.h"

/* One --peer NAME=HOST:PORT; @where names it in errors. */
int ssqd_peer_opt(struct ssqd_options *o, const char *spec, char *why, size_t whylen);

/* Every line of --peers @path. */
int ssqd_peers_file(struct ssqd_options *o, const char *path, char *why, size_t whylen);

/*
 * After all options: --connect's HOST:PORT checked; with peers, this
 * daemon's name (--name, else the host name up to its first dot), its own
 * entry taken out (o->self_queues), --listen required and --connect
 * refused, names unique, and --queues times the peers within
 * SSQ_MAX_QUEUES; o->peer_queues and o->nqueues set.
 */
int ssqd_peer_opts_check(struct ssqd_options *o, char *why, size_t whylen);

/* 1 when @name may name a daemon: 1..SSQD_PEER_NAME_MAX-1 of [A-Za-z0-9._-]. */
int ssqd_peer_name_ok(const char *name);

#endif /* SSQ_CTRL_DAEMON_PEER_OPTS_H */
