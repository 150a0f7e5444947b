/* SPDX-License-Identifier: MIT */
/*
 * emu/emu_mw.h - the emulated device's type-2 memory windows (mw.c, umr.c):
 * bound and invalidated by call or by UMR WQE, and the responder's count
 * of requests no key let in. Part of emu/emu.h, which includes it; the
 * objects named here are made by emu.h's calls.
 */
#ifndef SSQ_EMU_MW_H
#define SSQ_EMU_MW_H

#include <ssq/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct emu_pd;
struct emu_mr;
struct emu_qp;

/*
 * Remote access as a capability, as a ConnectX gives it: an MR registered
 * with IBV_ACCESS_MW_BIND and no remote access is reachable by no peer;
 * a window bound over a range of it, to one QP, opens that range to the
 * peer of that QP alone, until it is invalidated or freed.
 *
 * emu_alloc_mw - a type-2 window of @pd (ibv_alloc_mw(pd, IBV_MW_TYPE_2);
 * mlx5_ib_alloc_mw), free (bound to nothing): its key, in *@rkey, reaches
 * nothing yet. Windows share the key table with MRs (SSQ_EMU_MAX_MR).
 * Returns 0, -EINVAL or -ENOMEM.
 *
 * emu_bind_mw - bind @mw to @qp over [@iova, +@len) of @mr with the
 * remote access @access (IBV_ACCESS_REMOTE_*), under the new key @rkey:
 * @mw's index (rkey & ~0xff) with a variant byte the caller chose,
 * nonzero (as IBV_WR_BIND_MW's bind_mw.rkey; the caller draws it at
 * random, ibv_bind_mw's ibv_inc_rkey only counts). What a bind WQE on
 * @qp's send queue does on a ConnectX, done at once. From then on a
 * request reaches the range with @rkey only when it arrives at @qp.
 * Returns 0, or -EINVAL (bad arguments, @qp not in RTS, another index,
 * variant 0, no access or an empty range), -EPERM (not one PD), -EBUSY
 * (@mw already bound: o10-37.2.30), -EACCES (@mr without MW_BIND, or
 * write/atomic asked of an MR without local write: C10-74), -ERANGE
 * (outside @mr: C10-75).
 *
 * emu_invalidate_mw - back to free (a LOCAL_INV WR's effect): its key
 * reaches nothing from the moment this returns; requests that come
 * later fail as any other bad key. Returns 0 or -EINVAL.
 *
 * emu_dealloc_mw - invalidate and free. Returns 0 or -EINVAL.
 * Destroying the QP a window is bound to invalidates it too.
 */
int emu_alloc_mw(struct emu_pd *pd, struct emu_mr **mwp, uint32_t *rkey);
int emu_bind_mw(struct emu_qp *qp, struct emu_mr *mw, struct emu_mr *mr, uint64_t iova,
                uint64_t len, int access, uint32_t rkey);
int emu_invalidate_mw(struct emu_mr *mw);
int emu_dealloc_mw(struct emu_mr *mw);

/*
 * Requests that arrived at @qp (the responder) with an rkey not valid for
 * it - no such key, a key of another QP's window, a free window, too
 * little access, outside the range - since it was created: a peer's
 * guesses. Each also fails the requester's WQE with REMOTE_ACCESS_ERR and
 * puts @qp in ERR with IBV_EVENT_QP_ACCESS_ERR, as an IB responder does on
 * an R_Key violation (class C, IB 9.9.3.1.3; rxe_resp.c's
 * RESPST_ERR_RKEY_VIOLATION: NAK remote access error, QP to error).
 * 0 for NULL.
 */
uint64_t emu_qp_access_errors(struct emu_qp *qp);

/*
 * A window's bind and invalidate as WQEs (umr.c): a UMR WQE on @qp's send
 * queue in the bytes of <ssq/wqe_mw.h> (libmlx5's IBV_WR_BIND_MW and
 * IBV_WR_LOCAL_INV) runs in order as emu_bind_mw / emu_invalidate_mw
 * would, its CQE opcode MLX5_OPCODE_UMR; a refused bind completes with
 * MLX5_CQE_SYNDROME_MW_BIND_ERR, a refused invalidate with
 * LOCAL_QP_OP_ERR, and @qp goes to ERR.
 *
 * emu_qp_umr_unfenced - WQEs that ran right after a UMR on @qp without
 * the initiator small fence libmlx5 puts there (a ConnectX may run them
 * before the window changed, and says nothing): counted, not refused.
 * 0 for NULL.
 */
uint64_t emu_qp_umr_unfenced(struct emu_qp *qp);

#ifdef __cplusplus
}
#endif

#endif /* SSQ_EMU_MW_H */
