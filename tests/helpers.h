/* SPDX-License-Identifier: MIT */
/*
 * Test helpers: CHECK() records a failure with file, line and a message and
 * goes on, so one run reports every broken case; test_exit() turns the
 * count into the exit code ctest reads (0 pass, 1 fail). SKIP() exits 77
 * after one line naming what is missing.
 */
#ifndef SSQ_TEST_HELPERS_H
#define SSQ_TEST_HELPERS_H

#include <stdio.h>
#include <stdlib.h>

static int test_failures;
static int test_checks;

#define CHECK(cond, ...)                                                                 \
	do {                                                                             \
		test_checks++;                                                           \
		if (!(cond)) {                                                           \
			test_failures++;                                                 \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, \
			        #cond);                                                  \
			fprintf(stderr, __VA_ARGS__);                                    \
			fputc('\n', stderr);                                             \
		}                                                                        \
	} while (0)

#define SKIP(...)                                                                        \
	do {                                                                             \
		printf("skip: ");                                                        \
		printf(__VA_ARGS__);                                                     \
		printf("\n");                                                            \
		exit(77);                                                                \
	} while (0)

static inline int test_exit(const char *name)
{
	if (test_failures) {
		fprintf(stderr, "%s: %d of %d checks failed\n", name, test_failures,
		        test_checks);
		return 1;
	}
	printf("%s: all %d checks passed\n", name, test_checks);
	return 0;
}

#endif
