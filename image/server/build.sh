#!/usr/bin/env bash
# image/server/build.sh - the server image: sandbox-mcp and what it needs to
# run, nothing else (no shell, no package manager), for `docker run -i` from
# a client on any OS Docker Desktop runs on (README "Install").
#
#   image/server/build.sh BINARY [TAG]     TAG defaults to sandbox-mcp:VERSION
#
# Offline: the files come from this machine (the binary, the shared
# libraries ldd names for it and for the ones it opens when a run needs them:
# libarchive, GnuTLS, libmicrohttpd; and the CA bundle for TLS engines), put
# in a tree and handed to `docker import` with the entry point. Prints the tag.
set -euo pipefail

bin=${1:?usage: image/server/build.sh BINARY [TAG]}
[ -x "$bin" ] || { echo "build.sh: $bin is not an executable" >&2; exit 2; }
version=$("$bin" --version | awk '{print $NF}')
tag=${2:-sandbox-mcp:$version}
# the MCP Registry pulls the image and checks this label against server.json's name
name=$(sed -n 's/^  "name": "\([^"]*\)",$/\1/p' "$(dirname "$0")/../../server.json")
[ -n "$name" ] || { echo "build.sh: no name in server.json" >&2; exit 2; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

# a file and the directory it sits in, at the same path in the tree
put() { mkdir -p "$root$(dirname "$1")" && cp -L "$1" "$root$1"; }
libs_of() { ldd "$1" | awk '/=> \//{print $3} /^[ \t]*\//{print $1}'; }

mkdir -p "$root/usr/bin"
# without its debug sections: a third of the size
strip -o "$root/usr/bin/sandbox-mcp" "$bin" 2>/dev/null || cp "$bin" "$root/usr/bin/sandbox-mcp"
chmod 0755 "$root/usr/bin/sandbox-mcp"
# the libraries it opens when a run needs them (base/dynlib.h): file transfers,
# TLS engines, serve --http
opened=
for so in libarchive.so.13 libgnutls.so.30 libmicrohttpd.so.12; do
	# awk reads to the end: an early exit would kill ldconfig with SIGPIPE, fatal under pipefail
	f=$(ldconfig -p | awk -v so="$so" '$1 == so && /x86-64|AArch64/ && !f {f = $NF} END {print f}')
	[ -n "$f" ] && opened="$opened $f"
done
for f in $(libs_of "$bin"; for o in $opened; do echo "$o"; libs_of "$o"; done); do put "$f"; done
[ -f /etc/ssl/certs/ca-certificates.crt ] && put /etc/ssl/certs/ca-certificates.crt
mkdir -p "$root/etc" "$root/tmp" "$root/run" "$root/workspace"
chmod 1777 "$root/tmp"
echo 'root:x:0:0:root:/root:/usr/sbin/nologin' > "$root/etc/passwd"
echo 'root:x:0:' > "$root/etc/group"

tar -C "$root" --owner=0 --group=0 -c . |
	docker import \
		-c 'ENTRYPOINT ["/usr/bin/sandbox-mcp"]' \
		-c 'ENV TMPDIR=/tmp' \
		-c "LABEL org.opencontainers.image.title=sandbox-mcp org.opencontainers.image.version=$version" \
		-c "LABEL io.modelcontextprotocol.server.name=$name" \
		- "$tag" >/dev/null
echo "$tag"
