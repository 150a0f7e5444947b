#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The man pages `cmake --install` puts in <mandir>/man{1,3,7,8}: each renders
# with `man -l` (MANWIDTH=80) and `groff -ww -z -man` without a warning;
# every .so link names an installed page; `man ssqd` and `man 3
# ssq_client_close` find them through MANPATH; ssqd.8 documents every
# option `ssqd --help` lists and has its ENVIRONMENT, FILES, SIGNALS and
# EXIT STATUS; every call a section 3 page names is declared in the
# installed headers and has a page or a link of its own; every tool has a
# section 1 page naming each option of its --help; every inline call of
# the posting headers (<ssq/queue.h>, <ssq/combine.h>, <ssq/post_wr.h>)
# has a page.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pkg_common.sh"

command -v man >/dev/null && command -v groff >/dev/null ||
	{ echo "SKIP: man (man-db) or groff (groff-base) missing: scripts/install-deps.sh"; exit 77; }
export LC_ALL=C.UTF-8 MANWIDTH=80 MAN_DISABLE_SECCOMP=1

want=(man8/ssqd.8 man7/ssq.7 man3/ssq_client_connect.3 man3/ssq_client_close.3
	man3/ssq_queue_open.3 man3/ssq_queue_close.3 man3/ssq_buf_alloc.3 man3/ssq_buf_free.3
	man3/ssq_post_write.3 man3/ssq_post_send.3 man3/ssq_reserve.3 man3/ssq_publish.3
	man3/ssq_submit.3 man3/ssq_poll.3 man3/ssq_queue_recover.3 man3/ssq_recv_copy.3
	man3/ssq_recv_peek.3)
for p in "${want[@]}"; do
	[ -f "$mandir/$p" ] || bad "$p not installed in $mandir"
done

cd "$mandir" # .so links are relative to the man root
pages=$(find man1 man3 man7 man8 -type f 2>/dev/null | sort || true) # no man1: each tool says so below
npages=0
nlinks=0
for p in $pages; do
	first=$(head -n1 "$p")
	if [[ $first == .so\ * ]]; then
		target=${first#.so }
		[ -f "$target" ] && nlinks=$((nlinks + 1)) || bad "$p: .so $target, not installed"
		continue
	fi
	npages=$((npages + 1))
	grep -q '@[A-Z_]*@' "$p" && bad "$p: unsubstituted @VAR@: $(grep -m1 '@[A-Z_]*@' "$p")"
	head -n3 "$p" | grep -q "^\.TH .* \"ssq $version\"" || bad "$p: .TH does not say \"ssq $version\""
done
for p in $pages; do
	man --warnings -l "$p" >"$work/out" 2>"$work/err" || bad "man -l $p failed: $(cat "$work/err")"
	[ -s "$work/err" ] && { bad "man --warnings -l $p:"; sed 's/^/     /' "$work/err"; }
	[ -s "$work/out" ] || bad "man -l $p rendered nothing"
	groff -ww -z -man -s -k "$p" 2>"$work/err" || true
	[ -s "$work/err" ] && { bad "groff -ww -z -man $p:"; sed 's/^/     /' "$work/err"; }
done
[ "$fail" -eq 0 ] && ok "man --warnings -l and groff -ww -z: $npages pages and $nlinks links, no warning"

# man finds them.
export MANPATH=$mandir
loc=$(man -w ssqd 2>&1)
[ "$loc" = "$mandir/man8/ssqd.8" ] && ok "man -w ssqd: $loc" || bad "man -w ssqd: $loc"
man ssqd 2>&1 | grep -q "SOCKET ACTIVATION" && ok "man ssqd renders" || bad "man ssqd"
man 3 ssq_client_close 2>&1 | head -n1 | grep -q "^SSQ_CLIENT_CONNECT(3)" &&
	ok "man 3 ssq_client_close shows ssq_client_connect(3)" || bad "man 3 ssq_client_close"
man 7 ssq 2>&1 | grep -q "TRUST MODEL" && ok "man 7 ssq has TRUST MODEL" || bad "man 7 ssq: no TRUST MODEL"

# ssqd.8 against ssqd --help.
text=$(LC_ALL=C MANWIDTH=200 man -l man8/ssqd.8 2>/dev/null | col -b)
opts=$("$bindir/ssqd" --help | grep -oE '(^|[ ,])--?[a-zA-Z][a-z-]*' | tr -d ' ,' | sort -u)
missing=
for o in $opts; do
	grep -qE -- "(^|[^a-z-])$o([^a-z-]|$)" <<<"$text" || missing+=" $o"
done
[ -z "$missing" ] && ok "ssqd.8 documents all $(echo "$opts" | wc -w) options of ssqd --help" ||
	bad "ssqd.8 misses options of ssqd --help:$missing"
for s in OPTIONS ENVIRONMENT FILES SIGNALS "EXIT STATUS" "SOCKET ACTIVATION"; do
	grep -q "^$s" <<<"$text" || bad "ssqd.8 has no $s section"
done
for e in SSQ_SOCKET SIGTERM SIGINT /run/ssqd/ssqd.sock; do
	grep -q -- "$e" <<<"$text" || bad "ssqd.8 does not mention $e"
done

# Section 1: every tool installed beside ssqd has its page (or a .so link),
# and each option its --help lists is in the page (the perftest tools
# share one; -h shows every flag they take).
ntools=0
for b in "$bindir"/*; do
	t=$(basename "$b")
	[ "$t" = ssqd ] && continue
	ntools=$((ntools + 1))
	if [ ! -f "man1/$t.1" ]; then
		bad "$t is installed without man1/$t.1"
		continue
	fi
	text=$(LC_ALL=C MANWIDTH=200 man -l "man1/$t.1" 2>/dev/null | col -b)
	missing=
	for o in $("$b" --help 2>&1 | grep -oE '(^|[ ,\[|])--?[a-zA-Z][a-zA-Z_-]*' |
		tr -d ' ,[|' | sort -u); do
		grep -qE -- "(^|[^a-zA-Z_-])$o([^a-zA-Z_-]|$)" <<<"$text" || missing+=" $o"
	done
	[ -z "$missing" ] && ok "man1/$t.1 documents every option of $t --help" ||
		bad "man1/$t.1 misses options of $t --help:$missing"
done
[ "$ntools" -ge 8 ] || bad "only $ntools tools installed beside ssqd"

# Section 3: every name in NAME is declared in the headers and has a page.
nnames=0
for p in $(grep -L '^\.so ' man3/*.3); do
	names=$(sed -n '/^\.SH NAME/,/^\.SH/p' "$p" | sed '1d;$d' | sed 's/ \\-.*//' | tr ',' '\n' |
		tr -d ' ' | grep -v '^$')
	for f in $names; do
		grep -qE "[ *]$f\(" "$prefix"/include/ssq/*.h || bad "$p names $f, not declared in <ssq/*.h>"
		[ -f "man3/$f.3" ] || bad "$p names $f, which has no man3/$f.3"
		nnames=$((nnames + 1))
	done
done
[ "$nnames" -ge 30 ] && ok "section 3: $nnames calls, each declared in <ssq/*.h>, each with a page" ||
	bad "section 3 names only $nnames calls"
# The posting API is inline, so no export lists it (pkg_symbols checks the
# out-of-line calls): every inline call of the headers that post (its
# name without the internals' ssq__) has a page, the combined posts of
# <ssq/combine.h> included.
ninline=0
for h in queue combine post_wr; do
	for f in $(grep -oE '^SSQ_INLINE [^(]*[ *]ssq_[a-z0-9_]+\(' "$prefix/include/ssq/$h.h" |
		grep -oE 'ssq_[a-z0-9_]+\($' | tr -d '(' | grep -v '^ssq__'); do
		ninline=$((ninline + 1))
		[ -f "man3/$f.3" ] || bad "<ssq/$h.h> has the inline call $f, which has no man3/$f.3"
	done
done
[ "$ninline" -ge 10 ] && ok "the $ninline inline calls of <ssq/{queue,combine,post_wr}.h> each have a page" ||
	bad "found only $ninline inline calls in <ssq/{queue,combine,post_wr}.h>"
pkg_done
