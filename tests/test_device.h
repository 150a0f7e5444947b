/* SPDX-License-Identifier: MIT */
/*
 * The device a test's ssqd runs on: $SSQ_TEST_DEVICE (an mlx5 device such as
 * mlx5_0, set by scripts/hw-check.sh), else the emulated device. Tests that
 * drive ssqd through behaviour any device has take it from here, so the same
 * test checks the emulated device in CI and a ConnectX in a lab.
 */
#ifndef SSQ_TEST_DEVICE_H
#define SSQ_TEST_DEVICE_H

#include <stdlib.h>
#include <string.h>

static inline const char *test_device(void)
{
	const char *d = getenv("SSQ_TEST_DEVICE");

	return d && *d ? d : "emu";
}

/* 1 when the test runs on the emulated device (fault injection available). */
static inline int test_device_is_emu(void)
{
	return !strcmp(test_device(), "emu");
}

#endif
