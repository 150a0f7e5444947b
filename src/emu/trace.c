/* SPDX-License-Identifier: MIT */
/*
 * The device's trace (SSQ_EMU_TRACE) and its device-error reports: every
 * WQE consumed and CQE written, decoded with the PRM field names and in hex,
 * so a trace can be read against the PRM and diffed between runs.
 */
#include <stdarg.h>
#include "emu/emu_pvt.h"

/* The WQE at @pi in hex, WQEBB by WQEBB (following the ring wrap). */
static void hex_wqe(FILE *out, const struct emu_qp *qp, uint32_t pi)
{
	const struct mlx5_wqe_ctrl_seg *ctrl =
	    (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&qp->sq, pi);
	unsigned ds = be32toh(ctrl->qpn_ds) & 0x3f;
	unsigned bbs = ds ? SSQ_DS_TO_WQEBBS(ds) : 1, i;

	if (bbs > qp->sq.wqe_cnt)
		bbs = qp->sq.wqe_cnt;
	for (i = 0; i < bbs; i++)
		ssq_hexdump(out, ssq_sq_wqebb(&qp->sq, pi + i), MLX5_SEND_WQE_BB);
}

void emu_trace_wqe(struct emu_qp *qp, uint32_t pi, const char *what)
{
	FILE *t = qp->dev->trace;

	fprintf(t, "qpn 0x%06x %s ", qp->qpn, what);
	ssq_wqe_dump(t, &qp->sq, pi);
	hex_wqe(t, qp, pi);
}

void emu_trace_cqe(struct emu_cq *cq, const struct mlx5_cqe64 *cqe)
{
	FILE *t = cq->dev->trace;

	fprintf(t, "cqn 0x%x write pi %u ", cq->cqn, cq->pi - 1);
	ssq_cqe_dump(t, cqe);
	ssq_hexdump(t, cqe, sizeof(*cqe));
}

void emu_trace_recv(struct emu_qp *qp, const void *wqe, uint32_t len, uint32_t idx)
{
	FILE *t = qp->dev->trace;

	fprintf(t, "qpn 0x%06x receive WQE %u\n", qp->qpn, idx);
	ssq_hexdump(t, wqe, len);
}

void emu_dev_error(struct emu_qp *qp, const char *fmt, ...)
{
	FILE *outs[2] = { stderr, qp->dev->trace };
	unsigned i;
	va_list ap;

	qp->dev->dev_errors++;
	for (i = 0; i < 2 && outs[i]; i++) {
		fprintf(outs[i], "ssq_emu: device error: qpn 0x%06x: ", qp->qpn);
		va_start(ap, fmt);
		vfprintf(outs[i], fmt, ap);
		va_end(ap);
		fprintf(outs[i], "; QP to ERR. WQE at consumer %u:\n", qp->sq_cc);
		if (ssq_wqe_dump(outs[i], &qp->sq, qp->sq_cc) < 0)
			fprintf(outs[i], "  (ds=0: not decodable)\n");
		hex_wqe(outs[i], qp, qp->sq_cc);
	}
}
