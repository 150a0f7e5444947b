/* SPDX-License-Identifier: MIT */
/*
 * opts_checks.c: the checks between flags (private to the option parser;
 * pt_default_socket and pt_become_server, which engine.c calls too, are in
 * opts.h).
 */
#ifndef SSQ_BENCH_PERFTEST_OPTS_CHECKS_H
#define SSQ_BENCH_PERFTEST_OPTS_CHECKS_H

#include "opts.h"

/*
 * Once every flag is read: refuses what does not go together (exits as
 * pt_bad_flag) and sets what follows. @s_given: --ssq_socket was given;
 * @q_given: -Q; @n_given: -n.
 */
void pt_check_combinations(struct pt_opts *o, int s_given, int q_given, int n_given);

#endif
