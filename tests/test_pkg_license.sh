#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# LICENSE is the MIT licence the SPDX tags name: every SPDX tag in the
# source tree says MIT, every C/C++ source and header carries one in its
# first lines, and cmake --install puts LICENSE in the doc directory.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pkg_common.sh"

lic=$src/LICENSE
if [ -f "$lic" ] && head -n1 "$lic" | grep -qx 'MIT License' &&
	grep -qx 'Copyright (c) 2026 The ssq authors' "$lic" &&
	grep -q 'Permission is hereby granted, free of charge' "$lic" &&
	grep -q 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' "$lic"; then
	ok "LICENSE: MIT, Copyright (c) 2026 The ssq authors"
else
	bad "LICENSE missing or not the MIT text"
fi

# The tree's files: git's list where there is one, else every file.
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	files=$(cd "$src" && git ls-files --cached --others --exclude-standard)
else
	files=$(cd "$src" && find . -path ./.git -prune -o -path './build*' -prune -o -type f -print |
		sed 's|^\./||')
fi
# A tag: a line where only comment marks come before it (/*, //, #, .\").
tags=$(cd "$src" && echo "$files" | while read -r f; do
	[ -f "$f" ] && grep -IHE '^[^A-Za-z0-9]*SPDX-License-Identifier:' "$f" || true
done)
n=$(echo "$tags" | grep -c . || true)
other=$(echo "$tags" | grep -vE ':[^A-Za-z0-9]*SPDX-License-Identifier: MIT *(\*/)? *$' || true)
if [ "$n" -gt 0 ] && [ -z "$other" ]; then
	ok "all $n SPDX tags say MIT"
else
	bad "SPDX tags that do not say MIT (of $n):"
	echo "$other" | sed 's/^/     /'
fi
untagged=$(cd "$src" && echo "$files" | grep -E '\.(c|h|cc|cpp|hpp)$' | while read -r f; do
	[ -f "$f" ] && ! head -n3 "$f" | grep -q 'SPDX-License-Identifier:' && echo "$f"
done || true)
[ -z "$untagged" ] && ok "every C/C++ file carries an SPDX tag" ||
	{ bad "C/C++ files without an SPDX tag:"; echo "$untagged" | sed 's/^/     /'; }

installed=$(find "$prefix" -name LICENSE)
[ -n "$installed" ] && cmp -s "$installed" "$lic" && ok "installed ${installed#"$prefix"/}" ||
	bad "LICENSE not installed under $prefix"
pkg_done
