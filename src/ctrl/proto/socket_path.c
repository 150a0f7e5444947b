/* SPDX-License-Identifier: MIT */
/* The default socket path (socket_path.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "ctrl/proto/socket_path.h"

int proto_default_socket(char *out, size_t len)
{
	const char *env = getenv("SSQ_SOCKET"), *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (env && *env)
		n = snprintf(out, len, "%s", env);
	else if (xdg && *xdg)
		n = snprintf(out, len, "%s/ssqd.sock", xdg);
	else if (getuid() == 0)
		n = snprintf(out, len, "/run/ssqd/ssqd.sock");
	else
		n = snprintf(out, len, "/tmp/ssqd-%u/ssqd.sock", (unsigned)getuid());
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
