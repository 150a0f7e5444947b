/* SPDX-License-Identifier: MIT */
/*
 * Claiming the client socket's path before binding it: one ssqd per path.
 * A lock file beside the socket (PATH.lock, flock) says whether an ssqd
 * serves it: held - refuse to start, naming the holder's pid, and leave
 * its socket alone (before, a second ssqd unlinked the first's socket and
 * made it unreachable); free - a socket left there is stale (its ssqd
 * died) and is reclaimed. The default path's private directory is made
 * here too, and refused if another uid owns it or others may write it.
 */
#ifndef SSQ_CTRL_DAEMON_SOCKET_CLAIM_H
#define SSQ_CTRL_DAEMON_SOCKET_CLAIM_H

#include <stddef.h>

/*
 * ssqd_socket_claim - take @path's lock. Returns the lock's fd (kept open
 * for as long as ssqd serves @path; closing it releases the claim), or
 * -EADDRINUSE (another ssqd serves it), -EPERM (an unsafe directory) or
 * the errno of the failing call, with the reason in @why.
 */
int ssqd_socket_claim(const char *path, char *why, size_t whylen);

/*
 * ssqd_socket_listen - a listening SOCK_SEQPACKET socket at @path (claimed
 * first), mode 0660. The path appears only once the socket listens: it is
 * bound under PATH.new and renamed into place, so a client that finds the
 * file can connect (bound at @path itself, a client in between bind() and
 * listen() was refused). Only a @path too long for that name is bound in
 * place. Returns the fd, or the negative errno with the reason in @why.
 */
int ssqd_socket_listen(const char *path, char *why, size_t whylen);

#endif /* SSQ_CTRL_DAEMON_SOCKET_CLAIM_H */
