#!/usr/bin/env bash
# Builds every libFuzzer target tests/fuzz/fuzz_*.c against the plugin sources (clang,
# ASan+UBSan) and runs each for $1 seconds on a copy of its seed corpus. Any crash fails.
# Further arguments name targets to run (e.g. "history state_payloads"); default all.
# The plugin sources are compiled once (into build-fuzz/obj, again only when a plugin file
# changed), then linked into each target.
set -euo pipefail
secs=${1:-300}
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${CZ_FUZZ_OUT:-$root/build-fuzz}
mkdir -p "$out/obj"
shopt -s nullglob
shift || true
if [ $# -gt 0 ]; then
	targets=()
	for n in "$@"; do targets+=("$root/tests/fuzz/fuzz_${n#fuzz_}.c"); done
else
	targets=("$root"/tests/fuzz/fuzz_*.c)
fi
if [ ${#targets[@]} -eq 0 ]; then echo "fuzz: no targets"; exit 0; fi
cflags=(-std=gnu11 -D_GNU_SOURCE -g -O1 -fno-sanitize-recover=undefined -DCZ_VERSION='"fuzz"'
	-I"$root/plugin")
srcs=()
for s in "$root"/plugin/*/*.c; do [ "$(basename "$s")" = main.c ] || srcs+=("$s"); done
stamp=$out/obj/.stamp
if [ ! -e "$stamp" ] || [ -n "$(find "$root/plugin" -newer "$stamp" -print -quit)" ]; then
	rm -f "$out"/obj/*.o
	printf '%s\n' "${srcs[@]}" | xargs -P 2 -I{} sh -c 'f={}; f=${f#*/plugin/}; clang "$@" -c -o "$0/obj/$(echo "${f%.c}" | tr / _).o" {}' \
		"$out" "${cflags[@]}" -fsanitize=fuzzer-no-link,address,undefined
	touch "$stamp"
fi
objs=("$out"/obj/*.o)
pass=0 fail=0
for t in "${targets[@]}"; do
	name=$(basename "$t" .c)
	clang "${cflags[@]}" -fsanitize=fuzzer,address,undefined -o "$out/$name" "$t" "${objs[@]}" \
		-Wl,-Bstatic -ljson-c -lyaml -Wl,-Bdynamic -lm -ldl -lcurl -lsystemd
	corpus=$out/corpus-$name
	rm -rf "$corpus"; mkdir -p "$corpus"
	[ -d "$root/tests/fuzz/corpus/${name#fuzz_}" ] && cp -r "$root/tests/fuzz/corpus/${name#fuzz_}/." "$corpus/"
	# a target may add libFuzzer flags of its own (fuzz_NAME.flags, one line; later flags win)
	extra=()
	[ -f "${t%.c}.flags" ] && read -ra extra <"${t%.c}.flags"
	if "$out/$name" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 "${extra[@]}" \
		-artifact_prefix="$out/$name-" "$corpus" >"$out/$name.log" 2>&1; then
		pass=$((pass + 1)); echo "fuzz: $name clean for ${secs}s ($(grep -c . "$out/$name.log") log lines)"
	else
		fail=$((fail + 1)); echo "fuzz: $name FAILED, see $out/$name.log"; tail -30 "$out/$name.log"
		# the input itself, so a CI log is enough to reproduce it (base64 -d > x; ./$name x)
		for a in "$out/$name"-crash-* "$out/$name"-leak-* "$out/$name"-timeout-* \
			"$out/$name"-oom-* "$out/$name"-slow-unit-*; do
			[ "$(stat -c %s "$a")" -le 4096 ] || { echo "fuzz: $name FAILED on $a (over 4 KiB)"; continue; }
			echo "fuzz: $name FAILED on $(basename "$a"), base64: $(base64 -w0 "$a")"
		done
	fi
done
echo "fuzz: $pass passed, $fail failed"
[ $fail -eq 0 ]
