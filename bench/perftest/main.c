/* SPDX-License-Identifier: MIT */
/*
 * One perftest-style tool: built once per test kind (CMakeLists.txt passes
 * PT_TEST and PT_TOOL); the engine does the rest.
 */
#include "engine.h"

int main(int argc, char **argv)
{
	struct pt_opts o;

	pt_parse(argc, argv, PT_TEST, PT_TOOL, &o);
	return pt_main(&o);
}
