#!/usr/bin/env bash
# format-check.sh [--fix] [FILE...]: the lines of plugin/ (or FILEs) over 100 columns, tabs of 8
# (.clang-format's ColumnLimit). --fix reformats just those lines with clang-format --lines,
# leaving the rest of each file as written. Part of make test (check only).
set -u
fix=0
[ "${1:-}" = --fix ] && { fix=1; shift; }
cd "$(dirname "$0")/../.."
files=("$@")
[ ${#files[@]} -eq 0 ] && mapfile -t files < <(git ls-files 'plugin/*.[ch]' 2>/dev/null || ls plugin/*/*.[ch])
bad=0
for f in "${files[@]}"; do
	mapfile -t long < <(expand -t8 "$f" | awk 'length($0) > 100 { print NR }')
	[ ${#long[@]} -eq 0 ] && continue
	if [ $fix = 1 ]; then
		args=()
		for n in "${long[@]}"; do args+=("--lines=$n:$n"); done
		clang-format -i "${args[@]}" "$f"
		mapfile -t long < <(expand -t8 "$f" | awk 'length($0) > 100 { print NR }')
	fi
	for n in "${long[@]}"; do
		echo "$f:$n: longer than 100 columns"
		bad=$((bad + 1))
	done
done
if [ $bad -gt 0 ]; then
	echo "format-check: $bad line(s) over 100 columns (tests/tools/format-check.sh --fix FILE)"
	exit 1
fi
echo "format-check: ${#files[@]} files within 100 columns"
