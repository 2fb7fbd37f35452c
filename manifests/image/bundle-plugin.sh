#!/bin/sh
# bundle-plugin.sh BINARY PREFIX [DESTDIR]
# Lays out DESTDIR/PREFIX/bin/cpuzombie with the shared objects it needs (its ELF interpreter
# and libc: json-c and libyaml are static; libcurl and libsystemd are dlopen()ed only by the
# agent) in DESTDIR/PREFIX/lib, and points the copy's interpreter and RPATH there. The result
# runs from PREFIX in any Linux container of the same architecture, whatever its C library:
# that is how the checks run inside node-problem-detector's image (README, Deployment).
set -eu
bin=$1 prefix=$2 dest=${3:-}
case $prefix in /*) ;; *) echo "bundle-plugin: PREFIX must be absolute" >&2; exit 2 ;; esac
interp=$(patchelf --print-interpreter "$bin")
mkdir -p "$dest$prefix/bin" "$dest$prefix/lib"
cp "$bin" "$dest$prefix/bin/cpuzombie"
# Every object ldd resolves ("name => /path (addr)" or "/path (addr)"), the interpreter, and
# libgcc_s.so.1, which glibc itself dlopen()s to unwind (thread exit, backtrace).
gcc_s=$(gcc -print-file-name=libgcc_s.so.1 2>/dev/null || true)
[ -f "$gcc_s" ] || gcc_s=$(ldconfig -p | awk '$1 == "libgcc_s.so.1" { print $NF; exit }')
{ ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
  echo "$interp"; [ -f "$gcc_s" ] && echo "$gcc_s"; } |
	sort -u | while read -r lib; do
		cp -L "$lib" "$dest$prefix/lib/$(basename "$lib")"
	done
# DT_RPATH, not RUNPATH: it also serves the dependencies of dependencies.
patchelf --set-interpreter "$prefix/lib/$(basename "$interp")" --force-rpath --set-rpath "$prefix/lib" \
	"$dest$prefix/bin/cpuzombie"
chmod 0755 "$dest$prefix/bin/cpuzombie" "$dest$prefix/lib/$(basename "$interp")"
