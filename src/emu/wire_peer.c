/* SPDX-License-Identifier: MIT */
/*
 * Whether the peer's emulated device is off the CPU: its UDP socket, on
 * this host, holds datagrams it has not read. Asked by the requester when
 * its ACK timer expires (wire_req.c). Only the kernel's socket table: it
 * calls nothing else in the device.
 *
 * A ConnectX's responder is the NIC: it acknowledges whether or not the
 * host's processes run, so a requester's retry_cnt counts only a peer that
 * is gone or does not answer. An emulated responder is a thread of the
 * peer's process; a loaded host can hold it off the CPU for longer than
 * timeout * (retry_cnt + 1) (ssqd's 67 ms x 8 = 537 ms), and counting those
 * expiries would fail the WQE with TRANSPORT_RETRY_EXC_ERR where the
 * hardware never would. An unread datagram in the peer's socket says its
 * device has not run since that datagram came; a socket that is gone (the
 * process died) or drained (it runs and dropped or ignored our packets,
 * e.g. its QP in RESET) says nothing of the kind, and the expiry counts as
 * on the hardware.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include "emu/wire_pvt.h"

int emu_wire_peer_unread(const struct sockaddr_in *peer)
{
	/*
	 * /proc/net/udp, one line per IPv4 UDP socket of this network
	 * namespace: local address as the __be32 printed %08X, its port
	 * %04X in host order, and rx_queue = udp_rqueue_get(), the bytes
	 * received and not yet read (udp4_format_sock, net/ipv4/udp.c).
	 * A socket bound to INADDR_ANY matches a loopback peer only: a
	 * remote host's socket is never in this table.
	 */
	uint32_t want = peer->sin_addr.s_addr, port = ntohs(peer->sin_port);
	int loopback = (ntohl(want) >> 24) == 127, unread = 0;
	char line[256];
	FILE *f = fopen("/proc/net/udp", "re");

	if (!f)
		return 0; /* no way to know: count the expiry, as before */
	while (!unread && fgets(line, sizeof(line), f)) {
		unsigned addr, lport, txq, rxq;

		if (sscanf(line, " %*u: %x:%x %*x:%*x %*x %x:%x", &addr, &lport, &txq,
		           &rxq) != 4)
			continue; /* the header */
		if (lport == port && (addr == want || (loopback && addr == 0)))
			unread = rxq != 0;
	}
	fclose(f);
	return unread;
}
