#!/usr/bin/env bash
# No circle between files, in what is built and in what is included:
#  - calls: for libssq, the emulated device, ssqd (together, as they link)
#    and the perftest engine, scripts/check-cycles.sh finds no file that
#    reaches itself through the global symbols it uses (nm);
#  - includes: no header reaches itself through #include "..." or
#    #include <ssq/...> (include guards would hide such a circle from the
#    compiler, not from a reader);
#  - floors: no include in src/ctrl or bench reaches up. src/ctrl is
#    proto < backend, client < daemon; inside src/ctrl/daemon a file includes
#    its own folder's header, ssqd.h and headers of folders below its own:
#    util/ < ssqd.h < queues/ < peers/ < watch/ < clients/ < the top
#    (setup, serve, idle, status, options) < main.c (docs/architecture.md). In
#    bench/perftest a file includes its own header and those of files
#    below it: opts.h, clock.h < opts_derived, opts_usage, opts_values,
#    opts_table < opts_checks, opts_perftest < opts.c < perftest.h
#    < checks, report, daemons, lanes
#    < loops < run, proxy < size_run < twohost_frames, twohost_queues
#    < twohost_echo < twohost_server, twohost_client < cluster < engine
#    < main.c; bench's own programs
#    (bench/*.c, *.cc) above all. A .c, .h or .cc in src/ctrl or bench
#    without a floor fails: a new file is placed in the plan.
set -euo pipefail
src=${SSQ_SOURCE_DIR:?}
build=${SSQ_BINARY_DIR:?}
fail=0

check() { # NAME OBJDIR...
	local name=$1
	shift
	if out=$(bash "$src/scripts/check-cycles.sh" "$@" 2>&1); then
		echo "ok   $name: ${out##*$'\n'}"
	else
		echo "FAIL $name:"
		echo "$out" | sed 's/^/     /'
		fail=1
	fi
}
o=$build/src/CMakeFiles
check "libssq + libssq_emu + ssqd" "$o/ssq_objs.dir" "$o/ssq_emu.dir" "$o/ssqd_core.dir" \
	"$o/ssqd.dir"
check "perftest engine" "$build/bench/perftest/CMakeFiles/ssq_perftest_engine.dir"

# Header includes: a depth-first walk over every header's quoted and
# <ssq/...> includes, resolved against include/ and src/ as the build does.
if ! python3 - "$src" <<'PY'; then
import os, re, sys
root = sys.argv[1]
inc = re.compile(r'^\s*#\s*include\s*[<"]((?:ssq/)?[^>"]+)[>"]', re.M)
def resolve(name, here):
    for base in (os.path.join(root, "include"), os.path.join(root, "src"), here):
        p = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(p):
            return p
    return None
graph = {}
for top in ("include", "src", "bench", "tests", "tools", "examples"):
    for d, _, fs in os.walk(os.path.join(root, top)):
        for f in fs:
            if f.endswith((".h", ".c", ".cc")):
                p = os.path.join(d, f)
                text = open(p, errors="replace").read()
                graph[p] = [q for q in (resolve(n, d) for n in inc.findall(text)) if q]
state, stack, bad = {}, [], []
def walk(p):
    state[p] = 1
    stack.append(p)
    for q in graph.get(p, []):
        if state.get(q) == 1:
            bad.append(stack[stack.index(q):] + [q])
        elif q not in state:
            walk(q)
    stack.pop()
    state[p] = 2
for p in sorted(graph):
    if p not in state:
        walk(p)
for c in bad:
    print("include circle: " + " -> ".join(os.path.relpath(x, root) for x in c))
print("%d files, %d include circles" % (len(graph), len(bad)))
sys.exit(1 if bad else 0)
PY
	fail=1
fi

# Floors: each file and header gets a floor from its path; an include may
# only reach a lower floor, or a header of the file's own group (its folder
# in src/ctrl, its own name in bench/perftest).
if ! python3 - "$src" <<'PY'; then
import os, re, sys
root = sys.argv[1]
inc = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
D = "src/ctrl/daemon/"
P = "bench/perftest/"
# Bottom to top; the first prefix that matches a path gives its floor.
floors = [
    ("src/ctrl/proto/", 0), ("src/ctrl/backend/", 1), ("src/ctrl/client/", 1),
    (D + "util/", 2), (D + "ssqd.h", 3), (D + "queues/", 4), (D + "peers/", 5),
    (D + "watch/", 6), (D + "clients/", 7), (D + "main.c", 9), (D, 8),
    # The options: opts.h, which every file uses, at the bottom; opts.c,
    # the parser that uses its helpers' headers, on top of them.
    (P + "opts.h", 0), (P + "clock.h", 0), (P + "opts_derived.", 1),
    (P + "opts_usage.", 1), (P + "opts_values.", 1), (P + "opts_table.", 1),
    (P + "opts_checks.", 2), (P + "opts_perftest.", 2), (P + "opts.c", 3),
    (P + "perftest.h", 4), (P + "checks.", 5),
    (P + "report.", 5), (P + "daemons.", 5), (P + "lanes.", 5), (P + "loops.", 6),
    (P + "run.", 7), (P + "proxy.", 7), (P + "size_run.", 8),
    (P + "twohost_frames.", 9), (P + "twohost_queues.", 9), (P + "twohost_echo.", 10),
    (P + "twohost_server.", 11), (P + "twohost_client.", 11), (P + "cluster.", 12),
    (P + "engine.", 13), (P + "main.c", 14),
    (P, None),  # a perftest file not placed above
    # bench's own programs (micro-benchmarks, instruction counts, line_ns):
    # leaves, above everything they may use.
    ("bench/", 15),
]
def floor(rel):
    for pre, f in floors:
        if rel.startswith(pre):
            return f
    return None
def group(rel):
    if rel.startswith(P):
        return os.path.splitext(rel)[0]
    return os.path.dirname(rel)
def resolve(name, here):
    for base in (os.path.join(root, "src"), here):
        q = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(q):
            return os.path.relpath(q, root)
    return None
bad = 0
for top in ("src/ctrl", "bench"):
    for d, _, fs in os.walk(os.path.join(root, top)):
        for f in sorted(fs):
            if not f.endswith((".c", ".h", ".cc")):
                continue
            rel = os.path.relpath(os.path.join(d, f), root)
            mine = floor(rel)
            if mine is None:
                # A new file is given its floor here, or the plan is a hope.
                print("no floor for %s: add it to the floors above" % rel)
                bad += 1
                continue
            for name in inc.findall(open(os.path.join(d, f), errors="replace").read()):
                to = resolve(name, d)
                if to is None or floor(to) is None or to == rel:
                    continue
                if group(to) == group(rel) and floor(to) == mine:
                    continue
                if floor(to) >= mine:
                    print("include reaches up: %s -> %s" % (rel, to))
                    bad += 1
print("%d includes reach up (or files without a floor) in src/ctrl and bench" % bad)
sys.exit(1 if bad else 0)
PY
	fail=1
fi
exit "$fail"
