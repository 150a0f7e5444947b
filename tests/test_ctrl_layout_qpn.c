/* SPDX-License-Identifier: MIT */
/*
 * A client rewrites a queue's QPN in the shared layout header: the next
 * client to open the queue must not ring with it (on a ConnectX whose UAR
 * page several QPs share, a doorbell for another QP; on the emulated device
 * a doorbell error that took the queue down). ssq_queue_open takes the QPN
 * from ssqd's reply and refuses a layout that disagrees, naming both; a
 * client that connects after the rewrite finds the layout ssqd wrote (ssqd
 * puts it back before a new client maps the arena) and opens the queue.
 */
#include "ctrl_flow.h"
#include "ctrl/client/client_pvt.h"

int main(void)
{
	struct ssq_client *c, *c2, *c3 = NULL;
	struct ssq_queue *q, *q2 = NULL, *q3 = NULL;
	struct shm_queue_layout *l;
	struct ssq_buf a, b;
	uint32_t qpn;
	pid_t d;
	int rc;

	d = flow_start_q0("lqpn", &c, &q, &a, &b);
	if (d < 0)
		return test_exit("ctrl_layout_qpn");
	if (test_failures)
		goto out;
	l = (struct shm_queue_layout *)
	        q->l; /* the shared header: any client can write it */
	qpn = l->qpn;
	CHECK(ssq_client_connect(sock_path, &c2) == 0, "second client");
	l->qpn = qpn ^ 0x40; /* after its connect: what it maps is rewritten */
	rc = ssq_queue_open(c2, "q0", &q2);
	CHECK(rc == -EBADMSG, "open with a rewritten layout QPN: %d (%s)", rc,
	      ssq_client_error(c2));
	CHECK(strstr(ssq_client_error(c2), "overwrote the layout") != NULL, "error: %s",
	      ssq_client_error(c2));
	if (rc == 0) {
		memset(a.addr, 0x31, 64);
		write_and_wait(q2, &a, &b, 64);
	}
	CHECK(ssq_client_connect(sock_path, &c3) == 0, "third client");
	rc = c3 ? ssq_queue_open(c3, "q0", &q3) : -1;
	CHECK(rc == 0 && l->qpn == qpn && ssq_queue_qpn(q3) == qpn,
	      "a client connecting after the rewrite opens q0: %d, layout QPN 0x%x, "
	      "want 0x%x",
	      rc, l->qpn, qpn);
	if (c3)
		ssq_client_close(c3);
	l->qpn = qpn;
	memset(a.addr, 0x32, 64);
	CHECK(write_and_wait(q, &a, &b, 64) == 0 && !memcmp(a.addr, b.addr, 64),
	      "the queue still works");
	ssq_client_close(c2);
out:
	ssq_client_close(c);
	t_ssqd_stop(d, NULL, sock_path);
	return test_exit("ctrl_layout_qpn");
}
