#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The installed ssqd.service is sandboxed: `systemd-analyze security`
# (offline, on the unit file) rates its exposure at 5.0 or under (an
# unhardened root service is 9.6 UNSAFE), and each capability it keeps
# (CapabilityBoundingSet=) is named in a comment of the unit saying why.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pkg_common.sh"

command -v systemd-analyze >/dev/null ||
	{ echo "skip: systemd-analyze not found (Debian: systemd; scripts/install-deps.sh installs it)"; exit 77; }
service=$(find "$prefix" -name ssqd.service)
[ -f "$service" ] || { bad "ssqd.service not installed under $prefix"; pkg_done; }
set +e
out=$(systemd-analyze security --offline=yes --no-pager "$service" 2>&1)
rc=$?
set -e
score=$(sed -n 's/.*Overall exposure level for ssqd.service: \([0-9.]*\).*/\1/p' <<<"$out")
if [ -z "$score" ]; then
	bad "systemd-analyze security --offline=yes gave no exposure level (exit $rc):"
	echo "$out" | tail -n 20 | sed 's/^/     /'
	pkg_done
fi
if awk -v s="$score" 'BEGIN { exit !(s <= 5.0) }'; then
	ok "systemd-analyze security ssqd.service: exposure $score (want <= 5.0)"
else
	bad "systemd-analyze security ssqd.service: exposure $score, want <= 5.0; what it counts against it:"
	# Its failed checks: a cross (or, outside a UTF-8 locale, an X) first.
	grep -vE '^(✓|  |→|$)' <<<"$out" | sed 's/^/     /'
fi
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$service")
[ -n "$caps" ] || bad "ssqd.service has no CapabilityBoundingSet=: every capability of root is kept"
for cap in $caps; do
	grep -q "^#.*\b$cap\b" "$service" && ok "$cap: its reason is in a comment" ||
		bad "$cap kept with no comment saying why"
done
pkg_done
