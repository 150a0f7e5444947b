#!/usr/bin/env bash
# Finds circles between files: file A depends on file B when one of A's
# undefined global symbols is defined (globally) in B. Any circle of such
# dependencies (A -> B -> A, or longer) is printed, one per group of files
# that all reach each other, with the symbols behind each step, and the exit
# status is 1; none: exit 0.
#
#   scripts/check-cycles.sh [-v] OBJ...
#
# Each OBJ is an object file, a static library (each member is a file), or
# a directory (every *.o under it). Give the objects of one program or
# library: a symbol defined in several of the given files (the same source
# compiled into two targets, every test's main) counts as a dependency on
# each of them. -v also prints every dependency (FILE -> FILE: symbols).
# Example, after a build:
#   scripts/check-cycles.sh build/bench/perftest/CMakeFiles/ssq_perftest_engine.dir
set -euo pipefail
verbose=0
case ${1:-} in
-v) verbose=1; shift ;;
-h | --help) sed -n '2,16s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
[ $# -gt 0 ] || { echo "usage: check-cycles.sh [-v] OBJ|LIB.a|DIR..." >&2; exit 2; }
command -v nm >/dev/null || { echo "check-cycles.sh: needs nm (binutils)" >&2; exit 2; }

files=()
for a in "$@"; do
	if [ -d "$a" ]; then
		while IFS= read -r -d '' f; do files+=("$f"); done < <(find "$a" -name '*.o' -type f -print0 | sort -z)
	elif [ -f "$a" ]; then
		files+=("$a")
	else
		echo "check-cycles.sh: $a: no such file or directory" >&2
		exit 2
	fi
done
[ ${#files[@]} -gt 0 ] || { echo "check-cycles.sh: no object files in $*" >&2; exit 2; }

# Names are printed without the directory every file shares (said once).
common=${files[0]#./}
common=${common%/*}/
[[ ${files[0]#./} == */* ]] || common=
for f in "${files[@]}"; do
	while [ -n "$common" ] && [[ ${f#./} != "$common"* ]]; do
		common=${common%/}
		[[ $common == */* ]] && common=${common%/*}/ || common=
	done
done
[ -z "$common" ] || echo "check-cycles: in $common"

# One line per global symbol: FILE<tab>TYPE<tab>NAME (archive members as
# lib.a[member.o]). nm -P: "name type value size"; an archive's members
# start with a "lib.a[member.o]:" line.
for f in "${files[@]}"; do
	g=${f#./}
	nm -P -g "$f" 2>/dev/null | awk -v f="${g#"$common"}" '
		/^[^ ]+\[[^ ]+\]:$/ { sub(/:$/, ""); f = $0; next }
		/^$/ || /:$/ { next }
		{ printf "%s\t%s\t%s\n", f, $2, $1 }' ||
		{ echo "check-cycles.sh: nm cannot read $f" >&2; exit 2; }
done | awk -F'\t' -v verbose="$verbose" '
function node(name) {
	if (!(name in id)) { id[name] = ++n; nm[n] = name }
	return id[name]
}
# Every node j reaches from i (depth first, iterative), into reach[i, j].
function reach_from(i,    stack, top, u, v) {
	top = 0
	stack[++top] = i
	while (top > 0) {
		u = stack[top--]
		for (v = 1; v <= n; v++)
			if (((u, v) in edge) && !((i, v) in reach)) {
				reach[i, v] = 1
				stack[++top] = v
			}
	}
}
# The shortest circle through s inside its group (breadth first).
function circle(s,    queue, head, tail, prev, seen, u, v, path, k, p) {
	head = 1; tail = 0
	queue[++tail] = s
	seen[s] = 1
	while (head <= tail) {
		u = queue[head++]
		if ((u, s) in edge) {
			k = 0
			for (v = u; v != s; v = prev[v])
				p[++k] = v
			path = nm[s]
			for (; k > 0; k--)
				path = path " -> " nm[p[k]]
			return path " -> " nm[s]
		}
		for (v = 1; v <= n; v++)
			if (((u, v) in edge) && group[v] == group[s] && !(v in seen)) {
				seen[v] = 1
				prev[v] = u
				queue[++tail] = v
			}
	}
	return ""
}
{
	f = node($1)
	if ($2 == "U" || $2 == "w" || $2 == "v")
		need[f, $3] = 1
	else if (!(($3, f) in defined)) {
		defined[$3, f] = 1
		definers[$3] = definers[$3] " " f
	}
}
END {
	for (k in need) {
		split(k, a, SUBSEP)
		if (!(a[2] in definers))
			continue # from outside: libc, libssq, ...
		m = split(definers[a[2]], d, " ")
		for (i = 1; i <= m; i++) {
			t = d[i] + 0
			if (t == a[1] + 0)
				continue
			edge[a[1] + 0, t] = 1
			syms[a[1] + 0, t] = syms[a[1] + 0, t] (syms[a[1] + 0, t] == "" ? "" : ", ") a[2]
		}
	}
	for (i = 1; i <= n; i++)
		for (j = 1; j <= n; j++)
			if ((i, j) in syms) {
				# sorted, for stable output
				m = split(syms[i, j], s, ", ")
				for (x = 2; x <= m; x++)
					for (y = x; y > 1 && s[y - 1] > s[y]; y--) {
						tmp = s[y]; s[y] = s[y - 1]; s[y - 1] = tmp
					}
				out = s[1]
				for (x = 2; x <= m; x++)
					out = out ", " s[x]
				syms[i, j] = out
			}
	if (verbose)
		for (i = 1; i <= n; i++)
			for (j = 1; j <= n; j++)
				if ((i, j) in edge)
					printf "%s -> %s: %s\n", nm[i], nm[j], syms[i, j]
	for (i = 1; i <= n; i++)
		reach_from(i)
	groups = 0
	for (i = 1; i <= n; i++) {
		if (group[i])
			continue
		members = nm[i]
		size = 1
		for (j = i + 1; j <= n; j++)
			if (((i, j) in reach) && ((j, i) in reach) && !group[j]) {
				group[j] = i
				members = members " " nm[j]
				size++
			}
		group[i] = i
		if (size < 2)
			continue
		groups++
		path = circle(i)
		printf "cycle: %s\n", path
		m = split(path, hop, " -> ")
		for (k = 1; k < m; k++)
			printf "  %s -> %s: %s\n", hop[k], hop[k + 1], syms[id[hop[k]], id[hop[k + 1]]]
		if (size > m - 1)
			printf "  (%d files reach each other: %s)\n", size, members
	}
	if (groups) {
		printf("check-cycles: %d group%s of files in a circle, among %d files\n", groups,
			groups > 1 ? "s" : "", n)
		exit 1
	}
	printf "check-cycles: no circle among %d files\n", n
}'
