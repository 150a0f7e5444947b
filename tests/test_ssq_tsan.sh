#!/usr/bin/env bash
# The multi-producer test (test_ssq_threads.c: producer threads sharing one
# queue, the emulated device's thread executing) built with
# ThreadSanitizer, library sources included, so that every access the
# reserve / publish / submit / route protocol shares between threads is
# checked for ordering. Any report fails the test.
set -euo pipefail
src=${SSQ_SOURCE_DIR:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc=${CC:-cc}

"$cc" -std=gnu11 -O1 -g -fsanitize=thread -Wall -Wextra -Werror \
	-I"$src/include" -I"$src/src" -I"$src/tests" \
	"$src/tests/test_ssq_threads.c" "$src"/src/dv/*.c "$src"/src/emu/*.c \
	-o "$work/test_ssq_threads_tsan" -libverbs -lmlx5 -lpthread
TSAN_OPTIONS="halt_on_error=1 abort_on_error=0 exitcode=66 second_deadlock_stack=1" \
	"$work/test_ssq_threads_tsan"
