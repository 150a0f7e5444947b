/* SPDX-License-Identifier: MIT */
/*
 * Where ssqd listens when not told (--socket, $SSQ_SOCKET): a directory
 * only its uid can write, never a name in world-writable /tmp that another
 * user could take first. Both sides use this, so a client finds its ssqd.
 */
#ifndef SSQ_CTRL_PROTO_SOCKET_PATH_H
#define SSQ_CTRL_PROTO_SOCKET_PATH_H

#include <stddef.h>

/*
 * The default socket path for this process's uid, into @out (@len bytes):
 *   $SSQ_SOCKET                  if set and not empty;
 *   $XDG_RUNTIME_DIR/ssqd.sock   if set (systemd's /run/user/UID, mode 0700);
 *   /run/ssqd/ssqd.sock          for root;
 *   /tmp/ssqd-UID/ssqd.sock      else (ssqd makes the directory, mode 0700).
 * Returns 0, or -ENAMETOOLONG.
 */
int proto_default_socket(char *out, size_t len);

#endif /* SSQ_CTRL_PROTO_SOCKET_PATH_H */
