/* SPDX-License-Identifier: MIT */
/*
 * ssqd --status: a running ssqd's queues and, in a cluster, its peers and
 * their links, printed as a table by a client of the ssqd at @socket_path.
 */
#ifndef SSQ_CTRL_DAEMON_STATUS_CMD_H
#define SSQ_CTRL_DAEMON_STATUS_CMD_H

#include <stdio.h>

/* 0, or 1 with the reason on stderr (no ssqd there, or it refused). */
int ssqd_status_print(const char *socket_path, FILE *out);

#endif /* SSQ_CTRL_DAEMON_STATUS_CMD_H */
