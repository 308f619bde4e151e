# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The container images the stack's jobs run in: real SIF files that the
# cluster's own apptainer builds from local material, never pulled from a
# registry. Sourced by slurm.sh (which defines in_root, the pivot_root
# entry every container needs, die, and the chroot); never run.
#
#   shell.sif    busybox (Debian's busybox-static) and nothing else: a
#                root without bash, coreutils, python or the node's files
#   python.sif   a Debian minbase root with python3 (and bash, coreutils):
#                what a training-like script needs
#
# Both are built once per recipe into $FORGE_CACHE_DIR/images/ (about 50 s
# cold: a debootstrap of the python root, busybox taken from it, two
# `apptainer build`s; seconds when cached) and installed at `up` into the
# runtime root the worker names images under (<storage>/runtimes/images/,
# the default FORGE_RUNTIME_ROOT): shell.sif, python.sif, and e2e.sif and
# demo.sif (the python image under the names the scenarios and the samples
# use). Each image carries /etc/forge-image (its name), which the
# scenarios read to tell the image's root from the node's.
# shellcheck disable=SC2154 # in_root, chroot_dir, storage: slurm.sh's

images_recipe=1
images_cache="$FORGE_CACHE_DIR/images"

# The python root: Debian minbase with python3's interpreter and standard
# library, and busybox-static, whose binary becomes the shell image.
images_rootfs() {
	local dir=$1 mirror log="$images_cache/rootfs.debootstrap.log"
	mirror=$(stack_debian_mirror)
	stack_apt_install debootstrap
	if ! debootstrap --variant=minbase --include=python3-minimal,libpython3-stdlib,busybox-static \
		sid "$dir" "$mirror" >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		die "debootstrap of the images' root failed (log: $log)"
	fi
	rm -rf "$dir"/usr/share/doc "$dir"/usr/share/man "$dir"/usr/share/locale \
		"$dir"/var/cache/apt/* "$dir"/var/lib/apt/lists/*
}

# The shell root: busybox and its applets, a passwd and group file (so that
# apptainer maps the job's user into them without a warning).
images_shell_root() {
	local from=$1 dir=$2 applet
	mkdir -p "$dir/bin" "$dir/etc" "$dir/tmp"
	cp "$from/usr/bin/busybox" "$dir/bin/busybox"
	for applet in $("$dir/bin/busybox" --list); do
		[ "$applet" = busybox ] || ln -sf busybox "$dir/bin/$applet"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$dir/etc/passwd"
	printf 'root:x:0:\n' >"$dir/etc/group"
}

# Builds both images into the cache unless this recipe's are there. The
# roots are made inside the chroot (its /var/tmp), where the cluster's
# apptainer builds them under pivot_root as it runs jobs.
images_prepare() {
	local marker="$images_cache/recipe" work=/var/tmp/forge-images name t0=$SECONDS
	# Both suites' clusters share the cache: one builds, the other waits.
	exec 8>"$FORGE_CACHE_DIR/images.lock"
	flock 8
	if [ -f "$marker" ] && grep -qx "recipe=$images_recipe" "$marker" &&
		[ -s "$images_cache/shell.sif" ] && [ -s "$images_cache/python.sif" ]; then
		exec 8>&-
		return 0
	fi
	mkdir -p "$images_cache"
	rm -rf "${chroot_dir:?}$work"
	mkdir -p "$chroot_dir$work"
	# apptainer build reads the root's hosts file (configure writes it too)
	[ -f "$chroot_dir/etc/hosts" ] || cp /etc/hosts "$chroot_dir/etc/hosts"
	stack_log "slurm: building the images (shell, python) into $images_cache"
	images_rootfs "$chroot_dir$work/python"
	images_shell_root "$chroot_dir$work/python" "$chroot_dir$work/shell"
	echo forge-python-image >"$chroot_dir$work/python/etc/forge-image"
	echo forge-shell-image >"$chroot_dir$work/shell/etc/forge-image"
	for name in shell python; do
		"${in_root[@]}" apptainer -q build --force "$work/$name.sif" "$work/$name" >>"$images_cache/build.log" 2>&1 ||
			die "apptainer build of $name.sif failed (log: $images_cache/build.log)"
		mv "$chroot_dir$work/$name.sif" "$images_cache/$name.sif.tmp"
		mv "$images_cache/$name.sif.tmp" "$images_cache/$name.sif"
	done
	rm -rf "${chroot_dir:?}$work"
	printf 'recipe=%s\nbuilt=%s\n' "$images_recipe" "$(date -u +%FT%TZ)" >"$marker"
	exec 8>&-
	stack_log "slurm: images ready ($((SECONDS - t0)) s)"
}

# Installs the cached images into the runtime root under their names: a
# hard link where the cache shares the file system, else a copy, renamed
# into place (a job starting meanwhile sees the old file or the new one).
# An image that differs from the cache's (a scenario broke one) is put back.
images_install() {
	local dir="$storage/runtimes/images" name src dst
	mkdir -p "$dir"
	chmod 0755 "$dir"
	for name in shell:shell python:python e2e:python demo:python; do
		src="$images_cache/${name#*:}.sif" dst="$dir/${name%%:*}.sif"
		[ "$dst" -ef "$src" ] && continue
		cmp -s "$src" "$dst" && continue
		ln -f "$src" "$dst.tmp" 2>/dev/null || cp -f "$src" "$dst.tmp"
		mv -f "$dst.tmp" "$dst"
	done
}
