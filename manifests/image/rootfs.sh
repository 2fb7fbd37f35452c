#!/bin/bash
# The final image's whole content, assembled in the staging stage of manifests/image/Dockerfile
# (a Debian stage with the runtime packages installed), and its SBOM.
# Usage: rootfs.sh ROOT VERSION
#
# ROOT gets only what the binaries need:
# - our binaries: the agent /usr/local/bin/cpuzombie (and its kubectl plugin name), the static
#   check binary /opt/cpuzombie/bin/cpuzombie that the chart's init container hands to NPD
#   (`cpuzombie install-plugin /plugin`: the agent copies it, so no cp ships), the configs
#   under /usr/share/cpuzombie;
# - the shared-library closure of the agent, the one dynamic program (ldd), and the dynamic
#   loader, with
#   the symlinks by which they are found (/lib and /lib64 as merged /usr has them);
# - what glibc loads at run time that ldd cannot see: libgcc_s.so.1 when a library of the
#   closure calls pthread_cancel, pthread_exit or backtrace (glibc dlopens it to unwind); the
#   NSS modules are none (glibc 2.36's files and dns are built into libc.so.6), but
#   /etc/nsswitch.conf (hosts: files dns, as libcurl's getaddrinfo resolves an API server by
#   name; the kubelet or podman bind-mounts /etc/hosts and /etc/resolv.conf);
# - /etc/passwd and /etc/group naming uid/gid 0 and 65534; ca-certificates' bundle (libcurl's
#   default CA file, for kubeconfigs that name no CA).
# No shell, no package manager, no setuid/setgid file: the build fails if one slipped in.
#
# The SBOM (SPDX 2.3, JSON) at ROOT/usr/share/cpuzombie/sbom.spdx.json lists every regular file
# of ROOT but itself with its SHA-1 and SHA-256, the package that CONTAINS it: the Debian
# package dpkg -S names (with its version from dpkg-query) or cpuzombie (ours and the files
# made here), and only those packages. ca-certificates.crt belongs to no package in dpkg's
# database (update-ca-certificates makes it from ca-certificates' files): ca-certificates.
set -euo pipefail
root=${1:?usage: rootfs.sh ROOT VERSION} version=${2:?usage: rootfs.sh ROOT VERSION}
dynamic=(/usr/local/bin/cpuzombie)
ours=(/usr/local/bin/cpuzombie /opt/cpuzombie/bin/cpuzombie /usr/share/cpuzombie/cpuzombie.yaml)
for f in /usr/share/cpuzombie/npd/*; do ours+=("$f"); done
sbom=/usr/share/cpuzombie/sbom.spdx.json

die() { echo "rootfs.sh: $*" >&2; exit 1; }
[ ! -e "$root" ] || die "$root exists"
mkdir -p "$root"

# copy PATH into ROOT as it is here: each symlink on the way (a directory's, as /lib's, or the
# file's own chain) as a symlink, then the file
copy() {
	local p=$1 d="" comp next
	local IFS=/
	for comp in ${p#/}; do
		d=$d/$comp
		if [ -L "$d" ]; then
			[ -L "$root$d" ] || { mkdir -p "$root$(dirname "$d")"; cp -P "$d" "$root$d"; }
			next=$(readlink "$d")
			case $next in /*) ;; *) next=$(dirname "$d")/$next ;; esac
			copy "$next${p#"$d"}"
			return
		fi
	done
	[ -f "$p" ] || die "$p is not a regular file"
	[ -e "$root$p" ] || { mkdir -p "$root$(dirname "$p")"; cp -p "$p" "$root$p"; }
}

# the closure: every library ldd resolves (it lists the transitive closure) and the loader
libs=$(for b in "${dynamic[@]}"; do
	ldd "$b" | awk -v b="$b" '/not found/ { print "rootfs.sh: " b ": " $0 > "/dev/stderr"; exit 1 }
		$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
done | sort -u)
# glibc's run-time dlopen of libgcc_s (pthread_cancel/pthread_exit unwinding, backtrace)
need_gcc_s=
for l in "${dynamic[@]}" $libs; do
	case $l in */libc.so.6) continue ;; esac
	if readelf --dyn-syms -W "$l" | awk '$7 == "UND" { print $8 }' |
		grep -qE '^(pthread_cancel|pthread_exit|backtrace)(@|$)'; then
		echo "rootfs.sh: $l calls pthread_cancel/pthread_exit/backtrace: libgcc_s.so.1" >&2
		need_gcc_s=/lib/x86_64-linux-gnu/libgcc_s.so.1
	fi
done
for f in "${ours[@]}" $libs $need_gcc_s /etc/ssl/certs/ca-certificates.crt; do
	copy "$f"
done
ln -s cpuzombie "$root/usr/local/bin/kubectl-cpuzombie"
printf '%s\n' 'root:x:0:0:root:/nonexistent:/nonexistent' \
	'nobody:x:65534:65534:nobody:/nonexistent:/nonexistent' >"$root/etc/passwd"
printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$root/etc/group"
printf '%s\n' 'passwd: files' 'group: files' 'hosts: files dns' >"$root/etc/nsswitch.conf"
chmod 0644 "$root/etc/passwd" "$root/etc/group" "$root/etc/nsswitch.conf"

# what must not be there
for s in sh bash dash ash busybox apt apt-get dpkg; do
	! find "$root" -name "$s" | grep . || die "$s in the image"
done
! find "$root" -perm /6000 | grep . || die "setuid/setgid file in the image"
# it runs from ROOT alone: the closure is complete
/usr/sbin/chroot "$root" /usr/local/bin/cpuzombie -v --version | grep '^census: bpf ' >/dev/null \
	|| die "the agent does not run from the image's files alone (or has no census)"
env -i /usr/sbin/chroot --userspec=65534:65534 "$root" /opt/cpuzombie/bin/cpuzombie config check \
	--config /usr/share/cpuzombie/cpuzombie.yaml >/dev/null
# the init container's copy, as the chart runs it (uid 65534, into a directory of its own)
mkdir -m 0777 "$root/tmp.plugin"
env -i /usr/sbin/chroot --userspec=65534:65534 "$root" /usr/local/bin/cpuzombie install-plugin \
	/tmp.plugin >/dev/null
cmp "$root/opt/cpuzombie/bin/cpuzombie" "$root/tmp.plugin/bin/cpuzombie" \
	|| die "install-plugin did not copy the check binary"
rm -r "$root/tmp.plugin"

# the SBOM
owner() {	# the Debian package of file $1 (dpkg's database may name it without /usr)
	local f=$1 c
	for c in "$f" "${f/#\/usr\/lib64\//\/lib64\/}" "${f/#\/usr\/lib\//\/lib\/}" \
		"${f/#\/usr\/bin\//\/bin\/}"; do
		dpkg -S "$c" 2>/dev/null |
			awk -F ': ' -v c="$c" '$2 == c { sub(/:.*/, "", $1); print $1; exit }' |
			grep . && return
	done
	case $f in /etc/ssl/certs/ca-certificates.crt) echo ca-certificates ;; *) return 1 ;; esac
}
declare -A pkg_of
for f in $(cd "$root" && find . -type f | sed 's/^\.//' | sort); do
	[ "$f" != "$sbom" ] || continue
	case $f in *[!A-Za-z0-9._/+-]*) die "file name not plain: $f" ;; esac
	o=
	for x in "${ours[@]}" /etc/passwd /etc/group /etc/nsswitch.conf; do
		[ "$f" != "$x" ] || o=cpuzombie
	done
	[ -n "$o" ] || o=$(owner "$f") || die "$f: no package owns it"
	pkg_of[$f]=$o
done
spdxid() { printf '%s' "$1" | tr -c 'A-Za-z0-9.\n-' '-'; }
sha() { "$1" <"$root$2" | cut -d' ' -f1; }
debs=$(printf '%s\n' "${pkg_of[@]}" | grep -vx cpuzombie | sort -u)
# unique per build (SPDX asks it of the namespace): the agent binary's SHA-256
ns=urn:cpuzombie:sbom:$version:$(sha sha256sum /usr/local/bin/cpuzombie)
{
	printf '{"spdxVersion":"SPDX-2.3","dataLicense":"CC0-1.0","SPDXID":"SPDXRef-DOCUMENT",'
	printf '"name":"cpuzombie-%s","documentNamespace":"%s",' "$version" "$ns"
	printf '"creationInfo":{"created":"%s",' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	printf '"creators":["Tool: manifests/image/rootfs.sh (dpkg -S, dpkg-query)"]},'
	printf '"packages":[{"SPDXID":"SPDXRef-Package-cpuzombie","name":"cpuzombie",'
	printf '"versionInfo":"%s","downloadLocation":"NOASSERTION",' "$version"
	printf '"filesAnalyzed":false,"licenseDeclared":"MIT"}'
	for p in $debs; do
		v=$(dpkg-query -W -f '${Version}' "$p")
		a=$(dpkg-query -W -f '${Architecture}' "$p")
		printf ',{"SPDXID":"SPDXRef-deb-%s","name":"%s",' "$(spdxid "$p")" "$p"
		printf '"versionInfo":"%s","supplier":"Organization: Debian",' "$v"
		printf '"downloadLocation":"NOASSERTION","filesAnalyzed":false,'
		printf '"externalRefs":[{"referenceCategory":"PACKAGE-MANAGER","referenceType":"purl",'
		printf '"referenceLocator":"pkg:deb/debian/%s@%s?arch=%s"}]}' "$p" "${v//+/%2B}" "$a"
	done
	printf '],"files":['
	n=0 rel=
	for f in $(printf '%s\n' "${!pkg_of[@]}" | sort); do
		n=$((n + 1))
		[ $n = 1 ] || printf ,
		printf '{"SPDXID":"SPDXRef-File-%d","fileName":".%s","checksums":[' $n "$f"
		printf '{"algorithm":"SHA1","checksumValue":"%s"},' "$(sha sha1sum "$f")"
		printf '{"algorithm":"SHA256","checksumValue":"%s"}]}' "$(sha sha256sum "$f")"
		p=${pkg_of[$f]}
		[ "$p" = cpuzombie ] && pid=SPDXRef-Package-cpuzombie || pid=SPDXRef-deb-$(spdxid "$p")
		rel=$rel',{"spdxElementId":"'$pid'","relationshipType":"CONTAINS",'
		rel=$rel'"relatedSpdxElement":"SPDXRef-File-'$n'"}'
	done
	printf '],"relationships":[{"spdxElementId":"SPDXRef-DOCUMENT","relationshipType":"DESCRIBES",'
	printf '"relatedSpdxElement":"SPDXRef-Package-cpuzombie"}%s]}\n' "$rel"
} >"$root$sbom"
chmod 0644 "$root$sbom"
echo "rootfs.sh: $(find "$root" -type f | wc -l) files, $(echo "$debs" | wc -l) Debian packages," \
	"$(du -sk "$root" | cut -f1) KiB" >&2
