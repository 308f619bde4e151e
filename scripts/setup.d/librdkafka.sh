#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# librdkafka >= 2.11.1 for the worker (Kafka 4 brokers need it; Debian bookworm
# ships 2.0.2). Idempotent and cached:
#
#   - if pkg-config already finds rdkafka >= the minimum (the system one, or
#     our build in $FORGE_CACHE_DIR/librdkafka), it does nothing;
#   - otherwise it fetches Debian sid's librdkafka source package with apt,
#     using a private source list and private apt state (the system's apt
#     configuration and lists are never touched, so no apt lock is needed),
#     builds it in a temporary directory and moves the result into
#     $FORGE_CACHE_DIR/librdkafka only when complete.
#
# Build against it with PKG_CONFIG_PATH=$FORGE_CACHE_DIR/librdkafka/lib/pkgconfig
# (the CMake build adds an RPATH to the lib directory).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../../tests/e2e/stack.d/common.sh
. "$here/../../tests/e2e/stack.d/common.sh"

min_version=2.11.1
prefix=$FORGE_CACHE_DIR/librdkafka
srcdir=$FORGE_CACHE_DIR/librdkafka-src # downloaded source package + private apt state
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"

version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

installed_ok() {
	local v
	v=$(pkg-config --modversion rdkafka 2>/dev/null) || return 1
	version_ge "$v" "$min_version"
}

report() {
	echo "librdkafka $(pkg-config --modversion rdkafka) ($(pkg-config --variable=libdir rdkafka))"
}

if installed_ok; then
	report
	exit 0
fi

mkdir -p "$FORGE_CACHE_DIR"
# One build at a time; the second waiter finds the finished build.
exec 9>"$FORGE_CACHE_DIR/librdkafka.lock"
flock 9
if installed_ok; then
	report
	exit 0
fi

# Leftovers of a build that was killed (we hold the lock: none is running).
rm -rf "$FORGE_CACHE_DIR"/librdkafka.build.* "$prefix.old"
started=$SECONDS
stack_apt_install build-essential pkg-config dpkg-dev xz-utils ca-certificates \
	zlib1g-dev libssl-dev libzstd-dev liblz4-dev libsasl2-dev libcurl4-openssl-dev

# --- fetch the source package (cached in $srcdir/pkg) -----------------------
apt_private() {
	apt-get -q \
		-o Dir::Etc::sourcelist="$srcdir/apt/sources.list" \
		-o Dir::Etc::sourceparts=- \
		-o Dir::State::Lists="$srcdir/apt/lists" \
		-o Dir::Cache="$srcdir/apt/cache" \
		-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= \
		-o APT::Sandbox::User=root \
		-o Acquire::Check-Valid-Until=false \
		-o Acquire::Languages=none \
		"$@"
}

fetch_source() {
	local mirror keyring
	mirror=$(stack_debian_mirror)
	keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	mkdir -p "$srcdir/apt/lists/partial" "$srcdir/apt/cache"
	echo "deb-src [signed-by=$keyring] $mirror sid main" >"$srcdir/apt/sources.list"
	stack_log "librdkafka: apt-get update (private list: sid deb-src on $mirror)"
	if ! apt_private update >"$srcdir/apt/update.log" 2>&1 || grep -q '^[WE]:' "$srcdir/apt/update.log"; then
		# The archive key of a newer release may be missing from bookworm's
		# keyring; the source's checksums still come from the (unsigned) index.
		stack_log "librdkafka: signed sid index failed ($(grep -m1 '^[WE]:' "$srcdir/apt/update.log" || true)); retrying with trusted=yes"
		echo "deb-src [trusted=yes] $mirror sid main" >"$srcdir/apt/sources.list"
		apt_private update >"$srcdir/apt/update.log" 2>&1 || {
			cat "$srcdir/apt/update.log" >&2
			return 1
		}
	fi
	rm -rf "$srcdir/pkg.tmp"
	mkdir -p "$srcdir/pkg.tmp"
	(cd "$srcdir/pkg.tmp" && apt_private source --download-only librdkafka) >"$srcdir/apt/source.log" 2>&1 || {
		cat "$srcdir/apt/source.log" >&2
		return 1
	}
	rm -rf "$srcdir/pkg"
	mv "$srcdir/pkg.tmp" "$srcdir/pkg"
}

newest_dsc() {
	[ -d "$srcdir/pkg" ] || return 0
	find "$srcdir/pkg" -maxdepth 1 -name 'librdkafka_*.dsc' | sort -V | tail -n1
}

dsc=$(newest_dsc)
if [ -z "$dsc" ]; then
	fetch_source
	dsc=$(newest_dsc)
	[ -n "$dsc" ] || {
		echo "librdkafka: no .dsc downloaded" >&2
		exit 1
	}
fi
stack_log "librdkafka: source $(basename "$dsc")"

# --- build in a temporary directory, install into a staging root ------------
build=$(mktemp -d "$FORGE_CACHE_DIR/librdkafka.build.XXXXXX")
trap 'rm -rf "$build"' EXIT
# Upstream's pristine tarball, without Debian's patches: those switch to
# Debian's external nanopb/cJSON/opentelemetry packages (not on bookworm),
# while upstream's tarball vendors them.
dpkg-source --skip-patches -x "$dsc" "$build/src" >"$build/dpkg-source.log" 2>&1 || {
	cat "$build/dpkg-source.log" >&2
	exit 1
}
src_version=$(sed -n 's/^Version: \([0-9.]*\).*/\1/p' "$dsc" | head -n1)
version_ge "$src_version" "$min_version" || {
	echo "librdkafka: sid has $src_version, need >= $min_version" >&2
	exit 1
}
stack_log "librdkafka: building $src_version (log: $build/build.log while it runs)"
(
	cd "$build/src" &&
		./configure --prefix="$prefix" &&
		make -j"$(nproc)" libs &&
		make -C src install DESTDIR="$build/stage"
) >"$build/build.log" 2>&1 || {
	tail -n 40 "$build/build.log" >&2
	echo "librdkafka: build failed" >&2
	exit 1
}
staged=$build/stage$prefix
[ -f "$staged/lib/pkgconfig/rdkafka.pc" ] || {
	echo "librdkafka: build installed no lib/pkgconfig/rdkafka.pc" >&2
	exit 1
}
cp "$build/build.log" "$staged/build.log"

# --- move into place ---------------------------------------------------------
if [ -e "$prefix" ]; then mv "$prefix" "$prefix.old"; fi
mv "$staged" "$prefix"
rm -rf "$prefix.old"
installed_ok || {
	echo "librdkafka: installed, but pkg-config reports $(pkg-config --modversion rdkafka 2>&1)" >&2
	exit 1
}
stack_log "librdkafka: built and installed in $((SECONDS - started)) s"
report
