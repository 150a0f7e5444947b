/* SPDX-License-Identifier: MIT */
/*
 * The wire's setup: the UDP socket (open, close), addresses, the fault
 * settings and counters, and which QPs have a remote peer. The packets
 * themselves: wire_io.c (out), wire_rx.c (in). See <ssq/emu.h>.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include "emu/wire_pvt.h"

/* "a.b.c.d:port" into @sa. Returns 0 or -EINVAL. */
static int parse_addr(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	unsigned long port;

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || port > 65535)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return -EINVAL;
	return 0;
}

static int fault_ok(const struct emu_wire_fault *f)
{
	return f->drop >= 0 && f->drop <= 1 && f->dup >= 0 && f->dup <= 1 &&
	       f->reorder >= 0 && f->reorder <= 1 && f->delay >= 0 && f->delay <= 1;
}

int emu_wire_parse_fault(const char *s, struct emu_wire_fault *f)
{
	char buf[256], *item, *save = NULL, *eq = NULL;

	if (!s || !f)
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	if (strlen(s) >= sizeof(buf)) {
		fprintf(stderr, "ssq_emu: wire fault string too long\n");
		return -EINVAL;
	}
	strcpy(buf, s);
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *end;
		double d;

		eq = strchr(item, '=');
		if (!eq || !eq[1])
			goto bad;
		*eq = 0;
		if (!strcmp(item, "seed") || !strcmp(item, "delay_us")) {
			unsigned long long v = strtoull(eq + 1, &end, 0);

			if (*end || eq[1] == '-')
				goto bad_eq;
			if (item[0] == 's')
				f->seed = v;
			else if (v > 10000000)
				goto bad_eq;
			else
				f->delay_us = (uint32_t)v;
			continue;
		}
		d = strtod(eq + 1, &end);
		if (*end || !(d >= 0 && d <= 1))
			goto bad_eq;
		if (!strcmp(item, "drop"))
			f->drop = d;
		else if (!strcmp(item, "dup"))
			f->dup = d;
		else if (!strcmp(item, "reorder"))
			f->reorder = d;
		else if (!strcmp(item, "delay"))
			f->delay = d;
		else
			goto bad_eq;
	}
	return 0;
bad_eq:
	*eq = '=';
bad:
	fprintf(stderr, "ssq_emu: SSQ_EMU_WIRE_FAULT: bad item '%s'\n", item);
	memset(f, 0, sizeof(*f));
	return -EINVAL;
}

static void set_fault_locked(struct emu_wire *w, const struct emu_wire_fault *f)
{
	memset(&w->fault, 0, sizeof(w->fault));
	if (f)
		w->fault = *f;
	w->rng = w->fault.seed ? w->fault.seed : 1;
}

int emu_wire_set_fault(struct emu_dev *dev, const struct emu_wire_fault *f)
{
	int ret = 0;

	if (!dev || (f && !fault_ok(f)))
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	if (dev->wire)
		set_fault_locked(dev->wire, f);
	else
		ret = -EINVAL;
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int emu_wire_open(struct emu_dev *dev, const char *bind_addr, char *local_out, size_t len)
{
	struct emu_wire_fault f;
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	const char *env = getenv("SSQ_EMU_WIRE_FAULT");
	struct emu_wire *w;
	char host[INET_ADDRSTRLEN], out[INET_ADDRSTRLEN + 8];
	int ret, fd, sz = 4 << 20;

	if (!dev || parse_addr(bind_addr ? bind_addr : "127.0.0.1:0", &sa))
		return -EINVAL;
	memset(&f, 0, sizeof(f));
	if (env && *env && emu_wire_parse_fault(env, &f))
		return -EINVAL;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Room for a window of packets in flight; best effort. */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host));
	snprintf(out, sizeof(out), "%s:%u", host, ntohs(sa.sin_port));
	if (local_out && strlen(out) >= len) {
		close(fd);
		return -ENOSPC;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		close(fd);
		return -ENOMEM;
	}
	w->fd = fd;
	set_fault_locked(w, &f);
	pthread_mutex_lock(&dev->lock);
	if (dev->wire) {
		pthread_mutex_unlock(&dev->lock);
		close(fd);
		free(w);
		return -EEXIST;
	}
	dev->wire = w;
	pthread_mutex_unlock(&dev->lock);
	if (local_out)
		strcpy(local_out, out);
	return 0;
}

int emu_qp_set_remote(struct emu_qp *qp, const char *addr)
{
	struct sockaddr_in sa;
	struct emu_wire_qp *wq = NULL;
	int ret = -EINVAL;

	if (!qp || (addr && parse_addr(addr, &sa)))
		return -EINVAL;
	if (addr) {
		wq = calloc(1, sizeof(*wq));
		if (!wq)
			return -ENOMEM;
		wq->peer = sa;
	}
	pthread_mutex_lock(&qp->dev->lock);
	if (qp->dev->wire && (qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_INIT)) {
		free(qp->wire);
		qp->wire = wq;
		wq = NULL;
		ret = 0;
	}
	pthread_mutex_unlock(&qp->dev->lock);
	free(wq);
	return ret;
}

int emu_wire_fd(const struct emu_dev *dev)
{
	return dev->wire ? dev->wire->fd : -1;
}

int emu_wire_waiting(const struct emu_dev *dev)
{
	unsigned i;

	if (!dev->wire)
		return 0;
	if (dev->wire->nheld)
		return 1;
	for (i = 0; i < dev->nqp; i++) {
		const struct emu_qp *qp = dev->qps[i];

		if (qp && qp->wire && qp->wire->head != qp->wire->tail)
			return 1;
	}
	return 0;
}

int emu_wire_stats(struct emu_dev *dev, struct emu_wire_stats *st)
{
	int ret = -EINVAL;

	if (!dev || !st)
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	if (dev->wire) {
		*st = dev->wire->st;
		ret = 0;
	}
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

void emu_wire_close(struct emu_dev *dev)
{
	unsigned i;

	for (i = 0; i < SSQ_EMU_MAX_QP; i++)
		if (dev->qps[i])
			emu_wire_qp_free(dev->qps[i]);
	if (dev->wire) {
		close(dev->wire->fd);
		free(dev->wire);
		dev->wire = NULL;
	}
}
