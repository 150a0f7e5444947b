/* SPDX-License-Identifier: MIT */
/*
 * ssq/dump.h - print WQEs and CQEs field by field with their PRM names, for
 * the demo, traces and debugging user WQEs. Not for the hot path.
 */
#ifndef SSQ_DUMP_H
#define SSQ_DUMP_H

#include <stdio.h>
#include <ssq/common.h>
#include <ssq/sq.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "RDMA_WRITE", "ATOMIC_CS", ...; "UNKNOWN(0x..)" is not returned: NULL. */
const char *ssq_opcode_name(uint8_t mlx5_opcode);
/* "REQ", "RESP_SEND_IMM", "REQ_ERR", ...; NULL for an unknown one. */
const char *ssq_cqe_opcode_name(uint8_t cqe_opcode);
/* "REMOTE_ACCESS_ERR", ...; NULL for an unknown one. */
const char *ssq_syndrome_name(uint8_t syndrome);

/*
 * ssq_wqe_dump - decode the WQE at producer counter @pi of @sq onto @out:
 * each segment the opcode implies, each field with its PRM name and value,
 * following the ring wrap. Returns the WQEBBs the WQE spans by its DS count,
 * or -EINVAL when the DS count is 0 (nothing decodable).
 */
int ssq_wqe_dump(FILE *out, const struct ssq_sq *sq, uint32_t pi);

/* ssq_cqe_dump - decode one 64-byte CQE (error CQEs through mlx5_err_cqe). */
void ssq_cqe_dump(FILE *out, const struct mlx5_cqe64 *cqe);

/* ssq_hexdump - @len bytes of @p, 16 to a line, offsets from 0. */
void ssq_hexdump(FILE *out, const void *p, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* SSQ_DUMP_H */
