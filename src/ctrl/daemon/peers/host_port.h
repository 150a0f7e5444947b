/* SPDX-License-Identifier: MIT */
/*
 * A peer's address as ssqd's options give it: "HOST:PORT", HOST an IPv4
 * address, a DNS name or an IPv6 address in brackets ("[ADDR]:PORT", as
 * URLs write it: its colons would make the port ambiguous).
 */
#ifndef SSQ_CTRL_DAEMON_HOST_PORT_H
#define SSQ_CTRL_DAEMON_HOST_PORT_H

#define SSQD_HOST_MAX 256 /* HOST of a HOST:PORT, and its NUL */
#define SSQD_PORT_MAX 8

/*
 * Split @host_port into @host (brackets taken off) and @port (1..65535,
 * as decimal digits), checking that a lookup could answer the host: an
 * IPv4 address in dotted quads, an IPv6 one in brackets, or a DNS name
 * (labels of letters, digits, '-' and '_', no label all digits at the
 * end). Neither address is the unspecified one. No lookup is made. 0, or
 * -EINVAL with what was wrong in *@bad.
 */
int ssqd_link_split(const char *host_port, char host[SSQD_HOST_MAX],
                    char port[SSQD_PORT_MAX], const char **bad);

#endif /* SSQ_CTRL_DAEMON_HOST_PORT_H */
