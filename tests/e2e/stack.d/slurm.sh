#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The stack's Slurm: a real Slurm (Debian sid: 26.05) in a debootstrapped chroot
# on this machine. slurmctld, one slurmd per node (8 fake GPUs each; sid:
# h200-1..3 and a100-1..3 in the default partition `batch`, which scenarios
# share side by side, and h200-f and a100-f in `faults`, `preempt` and
# `urgent`, which only the node-fault scenarios use; trixie: h200-1 and
# a100-1 in every partition) and slurmrestd with JWT auth on 127.0.0.1:16820; with them, what sites run
# for accounting: slurmdbd (127.0.0.1:16819) over a MariaDB of its own
# (Debian's, 127.0.0.1:16823), and jobcomp/kafka, which sends a start and an
# end record of every job to the stack's Kafka (topic forge.jobcomp, as the
# principal slurm-jobcomp over SASL_SSL: kafka.env names them, so kafka.sh up
# comes first). Jobs run in real containers: Debian sid's apptainer (with
# squashfuse, fuse3 and its optional fuse2fs and gocryptfs; the trixie
# cluster takes sid's, and sid's libc with it, since trixie ships none)
# starts each task in a SIF image that the stack builds from local material
# (images.sh). For that the daemons enter the chroot with pivot_root in a
# mount namespace of their own, not chroot (apptainer refuses a "weak
# chrooted environment"), and /dev/fuse is made usable by the job users
# (0666, as Debian ships it). Still not real, and why: the GPUs (character
# devices with NVIDIA's major and no driver behind them: there is no GPU
# here, so apptainer's --nv has no driver to bind), cgroups
# (CgroupPlugin=disabled: this sandbox delegates none), and Enroot+Pyxis
# (no registry here carries them: the render tests cover that profile).
# Jobs never run as root (apptainer cannot here: the sandbox's capability
# bounding set lacks one it asks for; sites run jobs as tenant users).
#
#   slurm.sh prepare   build the chroot into $FORGE_CACHE_DIR/slurm-<suite> (cached)
#   slurm.sh up        mount, configure, start the daemons that are down (the
#                      others, and running jobs, are left alone), wait for the
#                      API and every node, write slurm.env; a cluster that
#                      runs with another slurm.conf than this script writes
#                      (its nodes changed) is stopped and started again
#   slurm.sh down      stop by pid, unmount; caches and run state stay
#   slurm.sh status    one line per daemon and one for the API; 0 when all are up
#   slurm.sh stop DAEMON     stop one daemon by pid (TERM, KILL after 30 s)
#   slurm.sh start DAEMON    start one daemon unless it runs, wait until it is ready
#   slurm.sh restart DAEMON  stop, then start
#   slurm.sh fail slurmd-NODE  the node dies: KILL its slurmd, its slurmstepd
#                      and their jobs at once (start brings it back)
#   slurm.sh as-job CMD...   CMD in the cluster's root as a job's task sees
#                      it (pivot_root, the job user, a clean environment):
#                      what scripts/bench times containers with
#
# DAEMON: mariadb, slurmdbd, slurmctld (the primary controller),
# slurmctld-backup (the backup: slurm.conf's second SlurmctldHost, in a UTS
# namespace whose hostname names it), slurmrestd, slurmrestd-2 or slurmd-NODE (NODE one
# of the nodes above; sid starts them in this order: slurmctld registers with
# slurmdbd, which needs its database). Stopping one touches no other
# process: slurmctld saves its state (StateSaveLocation, in cluster/state)
# and reads it back at start, so pending and running jobs survive, and
# whatever it could not send slurmdbd meanwhile (slurmdbd stopped: it keeps
# it and sends it once slurmdbd is back); a job's slurmstepd outlives its
# slurmd, which finds it again at start. Ready after start: MariaDB answers
# a query; slurmdbd answers `sacctmgr show cluster` (and slurmctld has
# registered with it again, when slurmctld runs); slurmctld answers
# `scontrol ping` (and the API's ping when slurmrestd runs; and has
# registered with slurmdbd when that runs); a slurmd has registered again
# (its node's SlurmdStartTime changed; skipped while slurmctld is down);
# slurmrestd answers HTTP (and its ping shows slurmctld responding when
# slurmctld runs). `status` adds a line for the accounting: MariaDB,
# slurmdbd and slurmctld's registration.
#
# FORGE_STACK_SLURM_SUITE picks the Debian suite: sid (default, Slurm 26.05,
# API v0.0.42-v0.0.45; slurm.env names v0.0.43) or trixie (Slurm 24.11,
# API v0.0.40-v0.0.42; its env file names v0.0.42). The two can run side by
# side: trixie has its own ports (slurmctld 16827, slurmd 17011/17012,
# slurmrestd 16830), run folder ($FORGE_STACK_RUN/slurm-trixie) and env file
# ($FORGE_STACK_RUN/slurm-trixie.env); sid keeps 16817, 17001/17002, 16820,
# $FORGE_STACK_RUN/slurm and slurm.env. Both share the storage root. trixie
# runs no slurmdbd, MariaDB nor jobcomp (its chroot has none of them; Debian
# ships no jobcomp/kafka for 24.11): slurmctld alone knows its jobs, until
# MinJobAge, and its env file says FORGE_STACK_SLURMDB=0.
#
# The env file also names FORGE_STACK_SLURMDB (1: /slurmdb/ answers and
# forge.jobcomp gets the records) and FORGE_STACK_SLURM_MIN_JOB_AGE
# (slurm.conf's MinJobAge: how long slurmctld keeps a finished job).
#
# Host side, the run folder ($FORGE_STACK_RUN/slurm/ for sid) holds pids
# (<daemon>.pid), logs (<daemon>.log), the JWT key copy and token, the
# workers' state key (state.key: FORGE_STATE_KEY_FILE), slurmdbd's MariaDB
# password (mariadb-slurm.password, 0600, made once), and cluster/
# (slurmctld state, slurmd spools, MariaDB's data in mariadb/ and its socket
# and pid file in mariadb-run/), which is bind-mounted into the chroot at
# /var/lib/forge-stack. In the chroot, /etc/slurm holds slurm.conf,
# slurmdbd.conf and jobcomp-kafka.conf (the last two 0600, SlurmUser's: they
# hold passwords) and kafka-ca.pem (the stack's CA); /etc/mysql/forge-stack.cnf
# is MariaDB's (tests/e2e/slurm/*.in are their templates).
# $FORGE_STACK_RUN/storage is bind-mounted at /shared/forge (another path on
# purpose: the worker sees one storage root, jobs another).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$here/common.sh"
templates=$(cd "$here/../slurm" && pwd)
# shellcheck source-path=SCRIPTDIR source=images.sh
. "$here/images.sh"

suite=${FORGE_STACK_SLURM_SUITE:-sid}
packages=slurmctld,slurmd,slurmrestd,slurm-client,slurm-wlm-jwt-plugin
case "$suite" in
sid)
	api=v0.0.43
	rest_extra=()
	run="$FORGE_STACK_RUN/slurm"
	env_file="$FORGE_STACK_RUN/slurm.env"
	ctld_port=16817 rest_port=16820 node_port_base=17001
	# Three nodes of each series for the scenarios that run side by side
	# (partition batch), and one of each that only the node-fault
	# scenarios use (partition faults, and preempt/urgent on them).
	batch_nodes=(h200-1 h200-2 h200-3 a100-1 a100-2 a100-3)
	fault_nodes=(h200-f a100-f)
	# Accounting and job completion records, as sites run them. MariaDB's
	# server and client cores: Debian's mariadbd, mariadb-install-db and
	# mariadb, without mariadb-server's service scripts, Perl tools, Galera
	# and systemd (they would make the chroot 728 MB instead of 375 MB, and its
	# build about 25 s longer; nothing here uses them).
	dbd=1 dbd_port=16819 db_port=16823
	packages+=,slurmdbd,mariadb-server-core,mariadb-client-core,slurm-wlm-kafka-plugin
	# apptainer, what it mounts images with, and the optional tools it
	# looks for at every start (without them each task's stderr begins
	# with "INFO: fuse2fs not found", "gocryptfs not found").
	packages+=,apptainer,squashfuse,fuse3,fuse2fs,gocryptfs
	# Bump when the chroot's recipe changes: a cached chroot of another
	# recipe is rebuilt. 2: slurmdbd, MariaDB and jobcomp/kafka. 3: apptainer.
	recipe=3
	;;
trixie)
	# 24.11's slurmrestd dies at start without accounting storage unless
	# limited to the slurmctld plugin ("Failure loading plugin path bindings").
	api=v0.0.42
	rest_extra=(-s openapi/slurmctld)
	# Its own ports, run folder and env file: it may run beside sid.
	run="$FORGE_STACK_RUN/slurm-trixie"
	env_file="$FORGE_STACK_RUN/slurm-trixie.env"
	ctld_port=16827 rest_port=16830 node_port_base=17011
	# The lifecycle tests alone use it: two nodes, every partition on them.
	batch_nodes=(h200-1 a100-1)
	fault_nodes=(h200-1 a100-1)
	# No slurmdbd, no jobcomp/kafka (trixie ships no slurm-wlm-kafka-plugin):
	# slurmctld alone knows the jobs, until MinJobAge.
	dbd=0 dbd_port='' db_port=''
	# 3: sid's apptainer (prepare's runtime_from_sid).
	recipe=3
	;;
*)
	echo "FORGE_STACK_SLURM_SUITE=$suite: only sid or trixie" >&2
	exit 2
	;;
esac

chroot_dir="$FORGE_CACHE_DIR/slurm-$suite"
marker="$chroot_dir/forge-stack.marker"
cluster="$run/cluster"
storage="$FORGE_STACK_RUN/storage"
in_chroot_cluster=/var/lib/forge-stack
in_chroot_storage=/shared/forge

rest_url="http://127.0.0.1:$rest_port"
# A second slurmrestd of the same cluster, as sites run several stateless
# ones side by side (issue 39): the TLS front balances over both, and the
# env file lists both plain ones (FORGE_STACK_SLURM_REST_URLS).
rest2_port=$((rest_port + 4))
# Every node once, in start order; node i listens on node_port_base + i.
declare -A node_port=()
nodes=()
for n in "${batch_nodes[@]}" "${fault_nodes[@]}"; do
	[ -z "${node_port[$n]:-}" ] || continue
	node_port[$n]=$((node_port_base + ${#nodes[@]}))
	nodes+=("$n")
done
job_user=forge job_uid=2001
# A second job user: the tenant tests' other tenant (FORGE_TENANTS_FILE).
job_user2=forge2 job_uid2=2003
rest_user=forgerest rest_uid=2002
# In start order: slurmdbd needs its database, slurmctld registers with
# slurmdbd at start (it queues what it sends while slurmdbd is away).
daemons=(slurmctld slurmctld-backup "${nodes[@]/#/slurmd-}" slurmrestd slurmrestd-2)
[ "$dbd" = 0 ] || daemons=(mariadb slurmdbd "${daemons[@]}")
token_file="$run/$job_user.jwt"
# SlurmUser's token: slurmrestd lets it submit for another user
# (X-SLURM-USER-NAME), which the tenant tests need.
proxy_token_file="$run/slurm.jwt"
tenants_file="$run/tenants.json"
key_copy="$run/jwt_hs256.key"
state_key="$run/state.key"
series_file="$run/gpu-series.json"
# slurmdbd's MariaDB account (StorageUser slurm): its password, made once.
db_pass_file="$run/mariadb-slurm.password"
db_cnf=/etc/mysql/forge-stack.cnf
# The accounts slurmdbd knows (sacctmgr): every job user in account forge.
db_account=forge
daemon_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

die() {
	stack_log "slurm: $*"
	exit 1
}

# --- mounts ---------------------------------------------------------------

is_mounted() { awk -v p="$1" '$2 == p { f = 1 } END { exit !f }' /proc/mounts; }

# Mount points at or below $1, deepest first.
mounts_below() {
	awk -v p="$1" '$2 == p || index($2, p "/") == 1 { print length($2), $2 }' /proc/mounts |
		sort -rn | cut -d' ' -f2-
}

unmount_path() {
	local m=$1 i
	for ((i = 0; i < 5; i++)); do
		is_mounted "$m" || return 0
		umount "$m" 2>/dev/null || umount -l "$m" || true
	done
	! is_mounted "$m" || stack_log "slurm: could not unmount $m"
}

# Bind $1 onto $2 unless that very folder is already mounted there.
ensure_bind() {
	local src=$1 dst=$2
	mkdir -p "$dst"
	if is_mounted "$dst"; then
		[ "$(stat -c %d:%i "$src")" = "$(stat -c %d:%i "$dst")" ] && return 0
		stack_log "slurm: $dst holds another mount; replacing it"
		unmount_path "$dst"
	fi
	mount --bind "$src" "$dst"
}

ensure_mounts() {
	local c=$1
	mkdir -p "$c/proc"
	if ! awk -v p="$c/proc" '$2 == p && $3 == "proc" { f = 1 } END { exit !f }' /proc/mounts; then
		unmount_path "$c/proc"
		mount -t proc proc "$c/proc"
	fi
	ensure_bind /dev "$c/dev"
	ensure_bind "$cluster" "$c$in_chroot_cluster"
	ensure_bind "$storage" "$c$in_chroot_storage"
}

unmount_all() {
	local c=$1 m
	for m in "$c$in_chroot_storage" "$c$in_chroot_cluster" "$c/dev" "$c/proc"; do
		unmount_path "$m"
	done
}

# Remove a half-built tree, unmounting what a killed debootstrap left inside.
remove_tree() {
	local d m
	[ -e "$1" ] || return 0
	d=$(readlink -f "$1")
	while read -r m; do
		[ -n "$m" ] && unmount_path "$m"
	done < <(mounts_below "$d")
	[ -z "$(mounts_below "$d")" ] || die "still mounted below $d; not removing it"
	rm -rf --one-file-system "$d"
}

# --- prepare --------------------------------------------------------------

# Trixie ships no apptainer: sid's, with what it needs from sid (its libc
# among them, which trixie's Slurm 24.11 runs on), sid pinned below trixie
# for everything else. /proc and /dev are mounted for the packages' scripts
# while it runs.
runtime_from_sid() {
	local root=$1 log=$2 rc=0
	sed 's/ trixie / sid /' "$root/etc/apt/sources.list" >"$root/etc/apt/sources.list.d/sid.list"
	printf 'Package: *\nPin: release n=sid\nPin-Priority: 100\n' >"$root/etc/apt/preferences.d/sid"
	cp /etc/resolv.conf "$root/etc/resolv.conf"
	mount -t proc proc "$root/proc"
	mount --bind /dev "$root/dev"
	chroot "$root" sh -c 'apt-get -q update && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends -t sid apptainer squashfuse fuse3 fuse2fs gocryptfs' >>"$log" 2>&1 || rc=$?
	unmount_path "$root/dev"
	unmount_path "$root/proc"
	[ "$rc" = 0 ] || die "installing sid's apptainer into the trixie chroot failed (log: $log)"
}

prepare() {
	if [ -f "$marker" ] && grep -qx "recipe=$recipe" "$marker"; then
		stack_log "slurm: chroot cached: $(grep -E '^(suite|slurm)=' "$marker" | paste -sd' ')"
		return 0
	fi
	[ -z "$(mounts_below "$(readlink -m "$chroot_dir")")" ] ||
		die "$chroot_dir is in use (mounted) but stale; run 'slurm.sh down' first"
	stack_apt_install debootstrap
	local mirror tmp log version m t0=$SECONDS
	mirror=$(stack_debian_mirror)
	tmp="$chroot_dir.partial"
	log="$FORGE_CACHE_DIR/slurm-$suite.debootstrap.log"
	remove_tree "$tmp"
	mkdir -p "$FORGE_CACHE_DIR"
	stack_log "slurm: debootstrap $suite into $tmp (log: $log)"
	# debootstrap checks the Release signature but not its Valid-Until date.
	if ! debootstrap --variant=minbase --include="$packages" "$suite" "$tmp" "$mirror" >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		remove_tree "$tmp"
		die "debootstrap failed (log: $log)"
	fi
	# A sid Release file may have expired: let apt inside the chroot use it anyway.
	echo 'Acquire::Check-Valid-Until "false";' >"$tmp/etc/apt/apt.conf.d/99forge-stack"
	while read -r m; do
		[ -n "$m" ] && unmount_path "$m"
	done < <(mounts_below "$(readlink -f "$tmp")")
	[ "$suite" != trixie ] || runtime_from_sid "$tmp" "$log"
	# shellcheck disable=SC2016 # a dpkg-query format, not a shell expansion
	version=$(chroot "$tmp" dpkg-query -W -f='${Version}' slurmctld)
	printf 'suite=%s\nslurm=%s\nrecipe=%s\npackages=%s\nbuilt=%s\n' \
		"$suite" "$version" "$recipe" "$packages" "$(date -u +%FT%TZ)" >"$tmp/forge-stack.marker"
	remove_tree "$chroot_dir"
	mv "$tmp" "$chroot_dir"
	stack_log "slurm: chroot ready: $suite, slurm $version ($((SECONDS - t0)) s)"
}

# --- processes ------------------------------------------------------------

# The process name (comm) of daemon $1.
daemon_comm() {
	case "$1" in
	mariadb) echo mariadbd ;;
	*) echo "${1%%-*}" ;;
	esac
}

# Process $1's name is $2 (daemon_comm), or Debian's binary's own name: a
# Slurm daemon that re-executes itself, as slurmctld and slurmd do on
# `scontrol reconfigure`, runs on as slurmctld-wlm, slurmd-wlm (the files
# behind /usr/sbin/slurmctld's alternative).
has_comm() {
	local comm
	{ read -r comm <"/proc/$1/comm"; } 2>/dev/null || return 1
	[ "$comm" = "$2" ] || [ "$comm" = "$2-wlm" ]
}

# The chroot's identity (device:inode): a process entered with pivot_root
# shows "/" as its root to readlink, so its root is compared by identity.
chroot_id() { stat -Lc %d:%i "$chroot_dir" 2>/dev/null; }

# Process $1's root is the chroot (identity $2: chroot_id).
rooted_here() { [ "$(stat -Lc %d:%i "/proc/$1/root/" 2>/dev/null)" = "$2" ]; }

# The pid in $1's pid file, if it is a live $1 process rooted in our chroot.
daemon_pid() {
	local name=$1 f="$run/$1.pid" pid
	[ -s "$f" ] || return 1
	pid=$(cat "$f")
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	rooted_here "$pid" "$(chroot_id)" || return 1
	has_comm "$pid" "$(daemon_comm "$name")" || return 1
	echo "$pid"
}

# Daemon $1's process still exists: it may not be the daemon yet (between
# start_daemon's fork and the chroot's exec it is setsid, env or chroot, a
# while on a loaded machine), but it has not exited.
daemon_alive() {
	local f="$run/$1.pid" pid
	[ -s "$f" ] || return 1
	pid=$(cat "$f")
	[[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null
}

# Every process whose root is our chroot: the daemons, slurmstepd, job
# steps (a task inside its container has the image's root: slurmstepd
# kills it with its job).
chroot_pids() {
	local id p
	id=$(chroot_id) || return 0
	for p in /proc/[0-9]*; do
		rooted_here "${p#/proc/}" "$id" && echo "${p#/proc/}"
	done
	return 0
}

wait_gone() {
	local secs=$1 i p left
	shift
	for ((i = 0; i < secs * 4; i++)); do
		left=0
		for p in "$@"; do kill -0 "$p" 2>/dev/null && left=1; done
		[ "$left" = 0 ] && return 0
		sleep 0.25
	done
	return 1
}

stop_all() {
	local d pid pids group
	# Slurm's daemons first (slurmctld sends what it still holds to
	# slurmdbd), then slurmdbd, then its database.
	for group in "slurmrestd slurmrestd-2 ${nodes[*]/#/slurmd-} slurmctld" slurmdbd mariadb; do
		pids=()
		for d in $group; do
			if pid=$(daemon_pid "$d"); then
				kill -TERM "$pid" 2>/dev/null || true
				pids+=("$pid")
			fi
		done
		if [ ${#pids[@]} -gt 0 ]; then
			stack_log "slurm: stopping ${pids[*]}"
			wait_gone 20 "${pids[@]}" || kill -KILL "${pids[@]}" 2>/dev/null || true
		fi
	done
	# What is left in the chroot (slurmstepd and job processes outlive slurmd,
	# daemons of a run whose pid files were lost) was started by this stack too.
	if [ -d "$chroot_dir" ]; then
		mapfile -t pids < <(chroot_pids)
		if [ ${#pids[@]} -gt 0 ]; then
			stack_log "slurm: stopping leftover chroot processes ${pids[*]}"
			kill -TERM "${pids[@]}" 2>/dev/null || true
			wait_gone 3 "${pids[@]}" || kill -KILL "${pids[@]}" 2>/dev/null || true
			wait_gone 5 "${pids[@]}" || true
		fi
	fi
	for d in "${daemons[@]}"; do rm -f "$run/$d.pid"; done
}

# "${in_root[@]}" CMD...: runs CMD in the chroot entered with pivot_root,
# in a mount namespace of its own (the host's mounts below the chroot come
# along: proc, dev, the cluster and storage folders; later changes to them
# propagate in, none out): what apptainer needs to start a container in a
# job step. A command line, not a function, so that env and setsid can run
# it; no fork: CMD keeps the caller's pid.
# shellcheck disable=SC2016 # the inner script's own expansions
in_root=(unshare -m --propagation slave /bin/sh -c
	'set -e; root=$1; shift; mount --rbind "$root" "$root"; cd "$root"
	pivot_root . mnt; cd /; umount -l /mnt; exec "$@"'
	in_root "$(readlink -m "$chroot_dir")")
# The same for a controller, in a UTS namespace of its own whose hostname
# ($2) tells slurmctld which SlurmctldHost it is (primary or backup: Slurm
# has no option for it), with a /run/slurmctld of its own for its pid file
# (a slurmctld that starts kills the one the pid file names).
# shellcheck disable=SC2016 # the inner script's own expansions
in_ctld_root=(unshare -m -u --propagation slave /bin/sh -c
	'set -e; root=$1; echo "$2" >/proc/sys/kernel/hostname; shift 2
	mount --rbind "$root" "$root"; cd "$root"
	pivot_root . mnt; cd /; umount -l /mnt
	mkdir -p /run/slurmctld; mount -t tmpfs -o mode=0755,size=1m forge-ctld-run /run/slurmctld
	chown slurm:slurm /run/slurmctld
	exec "$@"'
	in_ctld_root "$(readlink -m "$chroot_dir")")
# The same for a node's slurmd, with a /run/slurm of its own (a tmpfs in
# its namespace, which its jobs inherit): there it serves the node's
# sack.socket (auth/slurm), through which the srun of each job on the node
# gets its credentials, as on a machine of its own. Shared by every slurmd
# of the chroot, the socket was the last started one's: a node failed
# (`fail`) took every node's srun with it.
# shellcheck disable=SC2016 # the inner script's own expansions
in_node_root=(unshare -m --propagation slave /bin/sh -c
	'set -e; root=$1; shift; mount --rbind "$root" "$root"; cd "$root"
	pivot_root . mnt; cd /; umount -l /mnt
	mkdir -p /run/slurm; mount -t tmpfs -o mode=0755,size=1m forge-node-run /run/slurm
	exec "$@"'
	in_node_root "$(readlink -m "$chroot_dir")")

# Start "$@" in the chroot (in_root) in its own session, logging to
# $run/$name.log, with none of our descriptors ($! is the daemon's pid:
# each exec replaces the subshell).
start_daemon() {
	local name=$1
	shift
	printf '=== %s started by slurm.sh\n' "$(date -u +%FT%TZ)" >>"$run/$name.log"
	(
		stack_close_fds
		exec setsid env -i PATH="$daemon_path" HOME=/root LANG=C.UTF-8 "$@" \
			</dev/null >>"$run/$name.log" 2>&1
	) &
	echo $! >"$run/$name.pid"
}

# The port of slurmrestd $1 (slurmrestd or slurmrestd-2), and its URL.
rest_port_of() { if [ "$1" = slurmrestd-2 ]; then echo "$rest2_port"; else echo "$rest_port"; fi; }
rest_url_of() { echo "http://127.0.0.1:$(rest_port_of "$1")"; }

# Start one of $daemons by name.
launch_daemon() {
	case "$1" in
	mariadb) start_daemon mariadb "${in_root[@]}" mariadbd "--defaults-file=$db_cnf" ;;
	slurmdbd) start_daemon slurmdbd "${in_root[@]}" slurmdbd -D ;;
	slurmctld) start_daemon slurmctld "${in_ctld_root[@]}" forge-ctl slurmctld -D ;;
	# -f (the default file, named): how stray_pids tells the two apart
	slurmctld-backup) start_daemon "$1" "${in_ctld_root[@]}" forge-ctl-backup slurmctld -D -f /etc/slurm/slurm.conf ;;
	slurmd-*) start_daemon "$1" "${in_node_root[@]}" slurmd -D -N "${1#slurmd-}" ;;
	slurmrestd | slurmrestd-2)
		start_daemon "$1" env SLURM_JWT=daemon "${in_root[@]}" slurmrestd \
			-a rest_auth/jwt -u "$rest_user" -g "$rest_user" "${rest_extra[@]+"${rest_extra[@]}"}" \
			"127.0.0.1:$(rest_port_of "$1")"
		;;
	esac
}

# Processes in our chroot that are daemon $1 but not the one its pid file
# names (a run whose pid files were lost): they would hold its port.
stray_pids() {
	local name=$1 comm marker='' tracked id p
	comm=$(daemon_comm "$name")
	# one of several of a kind: a node's slurmd, a slurmrestd by its port
	[ "$comm" != slurmd ] || marker=" -N ${name#slurmd-} "
	[ "$comm" != slurmrestd ] || marker=" 127.0.0.1:$(rest_port_of "$name") "
	[ "$name" != slurmctld-backup ] || marker=" -f /etc/slurm/slurm.conf "
	tracked=$(daemon_pid "$name") || tracked=
	id=$(chroot_id) || return 0
	for p in /proc/[0-9]*; do
		[ "${p#/proc/}" != "$tracked" ] || continue
		has_comm "${p#/proc/}" "$comm" || continue
		rooted_here "${p#/proc/}" "$id" || continue
		if [ -n "$marker" ]; then
			tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q -- "$marker" || continue
		elif [ "$name" = slurmctld ]; then # not the backup
			! tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q -- " -f " || continue
		fi
		echo "${p#/proc/}"
	done
	return 0
}

# TERM "$@" (pids), KILL what is left after $1 seconds.
stop_pids() {
	local secs=$1
	shift
	[ $# -gt 0 ] || return 0
	kill -TERM "$@" 2>/dev/null || true
	wait_gone "$secs" "$@" && return 0
	stack_log "slurm: ${*} still alive after $secs s; KILL"
	kill -KILL "$@" 2>/dev/null || true
	wait_gone 5 "$@" || true
}

# One daemon, by pid, with its strays; no other process is touched (jobs
# and their slurmstepd outlive a slurmd; slurmctld saves its state on TERM).
stop_daemon() {
	local name=$1 pid pids=()
	if pid=$(daemon_pid "$name"); then pids+=("$pid"); fi
	mapfile -t -O "${#pids[@]}" pids < <(stray_pids "$name")
	if [ ${#pids[@]} -eq 0 ]; then
		stack_log "slurm: $name is not running"
	else
		stack_log "slurm: stopping $name (pid ${pids[*]})"
		stop_pids 30 "${pids[@]}"
	fi
	rm -f "$run/$name.pid"
}

# The slurmd of one chroot once shared /run/slurm/sack.socket (each has its
# own now: in_node_root), and two starting at once could collide
# ("init_sack_conmgr: [unix:/run/slurm/sack.socket] Unable to bind UNIX
# socket: Address already in use", fatal; seen once on a first start).
# They still start one at a time: a first start's burst stays small.
# $2: the log's line count before this start.
wait_slurmd_started() {
	local log="$run/slurmd-$1.log" i
	for ((i = 0; i < 40; i++)); do
		tail -n "+$(($2 + 1))" "$log" | grep -q 'slurmd started on' && return 0
		daemon_pid "slurmd-$1" >/dev/null || return 0 # wait_ready reports it
		sleep 0.25
	done
}

# --- configuration --------------------------------------------------------

in_chroot() { chroot "$chroot_dir" "$@"; }

ensure_user() {
	local name=$1 uid=$2
	shift 2
	in_chroot getent passwd "$name" >/dev/null && return 0
	in_chroot groupadd -g "$uid" "$name"
	in_chroot useradd -u "$uid" -g "$uid" "$@" "$name"
}

# Raw random bytes, 0600, owned by SlurmUser.
ensure_key() {
	local f="$chroot_dir/etc/slurm/$1" bytes=$2
	if [ ! -s "$f" ]; then
		(umask 077 && head -c "$bytes" /dev/urandom >"$f")
	fi
	chmod 0600 "$f"
	in_chroot chown slurm:slurm "/etc/slurm/$1"
}

# A value of the stack's kafka.env (kafka.sh up writes it; the stack runs
# kafka before slurm): the jobcomp principal, its password file, the CA.
kafka_env() {
	local f="$FORGE_STACK_RUN/kafka.env"
	[ -s "$f" ] || die "$f is missing: jobcomp/kafka needs the stack's Kafka (tests/e2e/stack up, or stack.d/kafka.sh up first)"
	# shellcheck disable=SC1090 # written by kafka.sh
	(. "$f" && printf '%s' "${!1:-}")
}

# sid's accounting: MariaDB's and slurmdbd's configuration, and
# jobcomp/kafka's librdkafka properties with a copy of the stack's CA. Each
# file that holds a password is 0600 and its daemon's user's own.
configure_dbd() {
	local c=$chroot_dir host=$1 user pass_file ca
	if [ ! -s "$db_pass_file" ]; then
		(umask 077 && head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$db_pass_file")
	fi
	chmod 0600 "$db_pass_file"
	sed -e "s/@DB_PORT@/$db_port/g" "$templates/mariadb.cnf.in" >"$c$db_cnf"
	chmod 0644 "$c$db_cnf"
	(umask 077 && sed -e "s/@HOST@/$host/g" -e "s/@DBD_PORT@/$dbd_port/g" \
		-e "s/@DB_PORT@/$db_port/g" -e "s/@DB_PASS@/$(cat "$db_pass_file")/g" \
		"$templates/slurmdbd.conf.in" >"$c/etc/slurm/slurmdbd.conf")
	chmod 0600 "$c/etc/slurm/slurmdbd.conf"
	in_chroot chown slurm:slurm /etc/slurm/slurmdbd.conf
	user=$(kafka_env FORGE_STACK_KAFKA_SLURM_USER)
	pass_file=$(kafka_env FORGE_STACK_KAFKA_SLURM_PASSWORD_FILE)
	ca=$(kafka_env FORGE_STACK_KAFKA_CA_FILE)
	if [ -z "$user" ] || [ ! -s "$pass_file" ] || [ ! -s "$ca" ]; then
		die "kafka.env names no jobcomp principal (FORGE_STACK_KAFKA_SLURM_*) or CA: run the stack's kafka up again (stack.d/kafka.sh up)"
	fi
	install -m 0644 "$ca" "$c/etc/slurm/kafka-ca.pem"
	(
		umask 077
		cat >"$c/etc/slurm/jobcomp-kafka.conf" <<-EOF
			# Written by tests/e2e/stack.d/slurm.sh: jobcomp/kafka's librdkafka
			# properties (JobCompLoc). The stack's SASL_SSL listener as the
			# principal $user (deploy/kafka/acls.tsv, role slurm: WRITE on
			# the jobcomp topic, nothing else); the broker's certificate is
			# checked against the stack's CA (a copy: the chroot cannot see
			# the host's cache).
			bootstrap.servers=$(kafka_env FORGE_STACK_KAFKA_SASL_SSL)
			security.protocol=SASL_SSL
			sasl.mechanisms=SCRAM-SHA-512
			sasl.username=$user
			sasl.password=$(cat "$pass_file")
			ssl.ca.location=/etc/slurm/kafka-ca.pem
		EOF
	)
	chmod 0600 "$c/etc/slurm/jobcomp-kafka.conf"
	in_chroot chown slurm:slurm /etc/slurm/jobcomp-kafka.conf
	# slurmdbd makes its runtime folder after it became SlurmUser: ready-made.
	mkdir -p "$c/run/slurmdbd"
	in_chroot chown slurm:slurm /run/slurmdbd
	mkdir -p "$cluster/mariadb"
}

# The slurm.conf of this suite: sid's @DBD@ lines kept, trixie's @NODBD@.
slurm_conf() {
	local host=$1 topic=''
	[ "$dbd" = 0 ] || topic=$(kafka_env FORGE_KAFKA_JOBCOMP_TOPIC)
	[ "$dbd" = 0 ] || [ -n "$topic" ] || die "kafka.env names no FORGE_KAFKA_JOBCOMP_TOPIC"
	local IFS=, n lines=''
	for n in "${nodes[@]}"; do
		# a node's series is its name's first part (h200-2: h200)
		lines+="NodeName=$n NodeHostname=$host NodeAddr=127.0.0.1 Port=${node_port[$n]} CPUs=8 RealMemory=8192 Feature=${n%%-*} Gres=gpu:8 State=UNKNOWN\\n"
	done
	sed -e "s/@HOST@/$host/g" -e "s/@CTLD_PORT@/$ctld_port/g" \
		-e "s/^@NODES@\$/${lines%\\n}/" \
		-e "s/@BATCH_NODES@/${batch_nodes[*]}/g" -e "s/@FAULT_NODES@/${fault_nodes[*]}/g" \
		-e "s/@DBD_PORT@/$dbd_port/g" -e "s/@JOBCOMP_TOPIC@/$topic/g" \
		"$templates/slurm.conf.in" |
		if [ "$dbd" = 1 ]; then sed -e '/^@NODBD@/d' -e 's/^@DBD@//'; else sed -e '/^@DBD@/d' -e 's/^@NODBD@//'; fi
}

configure() {
	local c=$chroot_dir n i host
	host=$(hostname)
	cp /etc/hosts "$c/etc/hosts"
	# the controllers' names (slurm.conf's SlurmctldHost; in_ctld_root)
	printf '127.0.0.1 forge-ctl\n127.0.0.2 forge-ctl-backup\n' >>"$c/etc/hosts"
	ensure_user "$job_user" "$job_uid" -m -s /bin/bash
	ensure_user "$job_user2" "$job_uid2" -m -s /bin/bash
	ensure_user "$rest_user" "$rest_uid" -M -d /nonexistent -s /usr/sbin/nologin
	# MariaDB's user (mariadb-server's postinst would make it; its core does not).
	[ "$dbd" = 0 ] || in_chroot getent passwd mysql >/dev/null ||
		in_chroot useradd -r -U -M -d /nonexistent -s /usr/sbin/nologin mysql
	in_chroot getent passwd slurm >/dev/null || die "no slurm user in the chroot"
	mkdir -p "$c/etc/slurm"
	ensure_key slurm.key 1024
	ensure_key jwt_hs256.key 32
	slurm_conf "$host" >"$c/etc/slurm/slurm.conf"
	[ "$dbd" = 0 ] || configure_dbd "$host"
	install -m 0644 "$templates/cgroup.conf" "$c/etc/slurm/"
	{
		cat "$templates/gres.conf"
		for n in "${nodes[@]}"; do
			echo "NodeName=$n Name=gpu File=/var/lib/fakegpu/$n/nvidia[0-7]"
		done
	} >"$c/etc/slurm/gres.conf"
	chmod 0644 "$c/etc/slurm/gres.conf"
	# Fake GPUs: character devices with NVIDIA's major and no driver behind
	# them (opening one fails with ENXIO). Plain files work as well, but make
	# slurmd log "is not a valid character or block device" for each.
	for n in "${nodes[@]}"; do
		mkdir -p "$c/var/lib/fakegpu/$n" "$cluster/spool/$n"
		for i in 0 1 2 3 4 5 6 7; do
			[ -c "$c/var/lib/fakegpu/$n/nvidia$i" ] && continue
			rm -f "$c/var/lib/fakegpu/$n/nvidia$i"
			mknod -m 0666 "$c/var/lib/fakegpu/$n/nvidia$i" c 195 "$i"
		done
	done
	in_chroot chown slurm:slurm "$in_chroot_cluster/state"
}

# apptainer mounts an image through squashfuse as the job's user: /dev/fuse
# must be open to users (0666, as Debian ships it; some sandboxes make it
# 0600). The chroot's /dev is the host's.
fuse_for_users() {
	[ -c /dev/fuse ] || die "no /dev/fuse: apptainer cannot mount images for the jobs"
	[ "$(stat -c %a /dev/fuse)" = 666 ] && return 0
	stack_log "slurm: /dev/fuse was $(stat -c %a /dev/fuse); making it 0666 for the job users"
	chmod 0666 /dev/fuse
}

# Every container sees the shared storage at the path the cluster does, as
# sites bind their shared file systems (/scratch, /home) into every
# container through apptainer.conf: a tenant's job reaches the storage
# root there, which the worker's trust scenarios attack through
# (test_trust.py). A request's own mounts come on top.
apptainer_binds_storage() {
	local conf="$chroot_dir/etc/apptainer/apptainer.conf" line="bind path = $in_chroot_storage"
	[ -f "$conf" ] || die "no $conf: the chroot has no apptainer"
	grep -qxF "$line" "$conf" || echo "$line" >>"$conf"
}

# The storage root belongs to the job user; a default ACL gives the job user
# rwx on whatever the worker (root) creates below it later.
prepare_storage() {
	mkdir -p "$storage/runtimes"
	chown "$job_uid:$job_uid" "$storage" "$storage/runtimes"
	chmod 0755 "$storage" "$storage/runtimes"
	if ! setfacl -m "u:$job_uid:rwx,d:u:$job_uid:rwx,d:u::rwx,d:g::rx,d:o::rx" \
		"$storage" "$storage/runtimes" 2>/dev/null; then
		stack_log "slurm: no ACLs on $storage; making it 1777 instead"
		chmod 1777 "$storage" "$storage/runtimes"
	fi
}

# --- accounting (sid) -------------------------------------------------------

db_sql() { in_chroot mariadb "--defaults-file=$db_cnf" -N -B -e "$1"; }

# MariaDB answers a query (as root, over its socket).
db_answers() { [ "$(db_sql 'SELECT 1' 2>/dev/null)" = 1 ]; }

# A data directory for MariaDB, once (kept in cluster/mariadb across runs),
# and the folder of its socket and pid file (cluster/mariadb-run), both
# MariaDB's user's.
db_init() {
	mkdir -p "$cluster/mariadb-run"
	in_chroot chown mysql:mysql "$in_chroot_cluster/mariadb-run"
	[ -d "$cluster/mariadb/mysql" ] && return 0
	stack_log "slurm: initialising MariaDB's data directory $cluster/mariadb"
	rm -rf "$cluster/mariadb"
	mkdir -p "$cluster/mariadb"
	in_chroot chown mysql:mysql "$in_chroot_cluster/mariadb"
	in_chroot mariadb-install-db "--defaults-file=$db_cnf" --skip-test-db \
		--auth-root-authentication-method=socket >>"$run/mariadb.log" 2>&1 ||
		die "mariadb-install-db failed (log: $run/mariadb.log)"
}

# slurmdbd's account in MariaDB (StorageUser, StoragePass): set at every
# start of slurmdbd, so the password file and the database always agree.
# The database is made here too: slurmdbd makes it when missing, but then
# goes on with the connection handle of its failed first attempt, on which
# Debian sid's libmariadb3 (Connector/C 3.4.10) refuses every result
# ("Number of columns in result (=1) set execeeds maxmimum allowed number
# of columns (=0)"): slurmdbd's first start would die.
db_setup() {
	local pass
	pass=$(cat "$db_pass_file")
	db_sql "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
		CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$pass';
		ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$pass';
		GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" ||
		die "MariaDB: could not set up slurmdbd's account"
}

# slurmdbd answers (sacctmgr, as root, over auth/slurm).
dbd_answers() { in_chroot sacctmgr -n -P show cluster format=cluster >/dev/null 2>&1; }

# slurmctld has registered with slurmdbd: the cluster's record names the
# controller's port.
ctld_dbd_connected() {
	[ "$(in_chroot sacctmgr -n -P show cluster forge format=controlport 2>/dev/null)" = "$ctld_port" ]
}

# What Slurm's accounting needs to know (idempotent): an account for the
# jobs and their users in it (root is slurmdbd's own). The cluster is
# slurmctld's to add: it registers with its ClusterID (the one its saved
# state holds, or a new one) and slurmdbd adds the cluster it does not know;
# one added first by sacctmgr gets an ID of slurmdbd's, which a slurmctld with
# older state refuses ("CLUSTER ID MISMATCH"). So this runs once slurmctld
# has registered.
dbd_register() {
	local u
	dbd_has_assoc "$db_account" '' ||
		dbd_add account "$db_account" cluster=forge description="the forge-worker e2e jobs" organization=forge
	for u in "$job_user" "$job_user2" root; do
		dbd_has_assoc "$db_account" "$u" || dbd_add user "$u" account="$db_account" cluster=forge
	done
}

# Account $1 (user $2, or the account's own association for '') is known on
# the cluster.
dbd_has_assoc() {
	local out
	out=$(in_chroot sacctmgr -n -P show assoc cluster=forge account="$1" format=account,user) ||
		die "sacctmgr show assoc failed"
	grep -qx "$1|$2" <<<"$out"
}

dbd_add() {
	in_chroot sacctmgr -i -Q add "$@" >/dev/null || die "sacctmgr add $* failed"
	stack_log "slurm: sacctmgr add $*"
}

# Before slurmdbd starts: its database answers, its account is set.
before_dbd() {
	daemon_pid mariadb >/dev/null || die "slurmdbd needs MariaDB: start mariadb first"
	stack_wait_for 60 db_answers || die "MariaDB does not answer (log: $run/mariadb.log)"
	db_setup
}

# --- the API --------------------------------------------------------------

b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }

# An HS256 token for user $1 valid $2 seconds, signed with the cluster's key.
mint_token() {
	local user=$1 life=$2 now head body sig key
	now=$(date +%s)
	key=$(od -An -v -tx1 "$chroot_dir/etc/slurm/jwt_hs256.key" | tr -d ' \n')
	head=$(printf '{"alg":"HS256","typ":"JWT"}' | b64url)
	body=$(printf '{"exp":%d,"iat":%d,"sun":"%s"}' $((now + life)) "$now" "$user" | b64url)
	sig=$(printf '%s.%s' "$head" "$body" |
		openssl dgst -sha256 -mac HMAC -macopt "hexkey:$key" -binary | b64url)
	printf '%s.%s.%s' "$head" "$body" "$sig"
}

# GET /slurm/<api>/$1 with a fresh short-lived token of our own, of the
# slurmrestd at $2 (default: the first).
rest_get() {
	local token
	[ -s "$chroot_dir/etc/slurm/jwt_hs256.key" ] || return 1
	token=$(mint_token "$job_user" 300)
	curl -sS --max-time 15 -H "X-SLURM-USER-NAME: $job_user" \
		-H "X-SLURM-USER-TOKEN: $token" "${2:-$rest_url}/slurm/$api/$1"
}

# The API's ping (of the slurmrestd at $1, default the first) shows
# slurmctld responding.
# slurmrestd $1 (default the first) answers its ping, every controller
# responding; with $2 = primary, the primary at least (the backup is down).
api_ping_ok() {
	rest_get ping "${1:-}" 2>/dev/null | jq -e --arg only "${2:-}" '
		(.pings | length > 0)
		and all(.pings[] | select($only == "" or .mode == $only); .responding == true)' >/dev/null
}

# Every node usable: IDLE, MIXED or ALLOCATED, and none DOWN, DRAIN nor unreachable.
nodes_ok() {
	rest_get nodes 2>/dev/null | jq -e --arg names "${nodes[*]}" '
		($names | split(" ")) as $want
		| [.nodes[] | select(.name as $n | $want | index($n))
			| select(any(.state[]; . == "IDLE" or . == "MIXED" or . == "ALLOCATED"))
			| select(all(.state[]; . != "DOWN" and . != "DRAIN" and . != "NOT_RESPONDING"
				and . != "FAIL" and . != "INVALID" and . != "INVALID_REG"))]
		| length == ($want | length)' >/dev/null
}

drained_nodes() {
	rest_get nodes 2>/dev/null | jq -r '.nodes[] | select(any(.state[]; . == "DRAIN")) | .name' || true
}

write_token() {
	local tmp="$token_file.tmp"
	(umask 077 && mint_token "$job_user" 86400 >"$tmp")
	mv "$tmp" "$token_file"
	(umask 077 && mint_token slurm 86400 >"$tmp")
	mv "$tmp" "$proxy_token_file"
	(umask 077 && cp "$chroot_dir/etc/slurm/jwt_hs256.key" "$key_copy.tmp")
	mv "$key_copy.tmp" "$key_copy"
}

# The workers' state key (FORGE_STATE_KEY_FILE): 32 random bytes, 0600, made
# once and kept, so records sealed by an earlier run still open.
ensure_state_key() {
	if [ ! -f "$state_key" ] || [ "$(stat -c %s "$state_key")" != 32 ]; then
		(umask 077 && head -c 32 /dev/urandom >"$state_key.tmp")
		mv "$state_key.tmp" "$state_key"
	fi
	chmod 0600 "$state_key"
}

# The worker gets the token file (FORGE_SLURM_JWT_FILE); the key is offered
# as FORGE_STACK_SLURM_JWT_KEY_FILE for tests that mint tokens, since a worker
# refuses to be given both.
write_env() {
	local tmp="$env_file.tmp"
	ensure_state_key
	cat >"$series_file" <<-'EOF'
		{"series": {"h200": {"slurm_constraint": "h200", "gpus_per_node": 8}, "a100": {"slurm_constraint": "a100", "gpus_per_node": 8}}}
	EOF
	cat >"$tenants_file" <<-EOF
		{"tenants": {"team-a": {"slurm_user": "$job_user", "uid": $job_uid, "gid": $job_uid},
		             "team-b": {"slurm_user": "$job_user2", "uid": $job_uid2, "gid": $job_uid2}},
		 "default_tenant": "team-a"}
	EOF
	{
		printf 'export %s=%q\n' \
			FORGE_SLURM_REST_URL "$rest_url" \
			FORGE_STACK_SLURM_REST_URLS "$rest_url,$(rest_url_of slurmrestd-2)" \
			FORGE_SLURM_REST_API_VERSION "$api" \
			FORGE_SLURM_REST_USER "$job_user" \
			FORGE_SLURM_JWT_FILE "$token_file" \
			FORGE_STACK_SLURM_JWT_KEY_FILE "$key_copy" \
			FORGE_STACK_SLURM_PROXY_JWT_FILE "$proxy_token_file" \
			FORGE_STACK_TENANTS_FILE "$tenants_file" \
			FORGE_STATE_KEY_FILE "$state_key" \
			FORGE_SLURM_PARTITION batch \
			FORGE_SLURM_RUNTIME_PROFILE apptainer \
			FORGE_STORAGE_ROOT "$storage" \
			FORGE_SLURM_STORAGE_ROOT "$in_chroot_storage" \
			FORGE_GPU_SERIES_FILE "$series_file" \
			FORGE_STACK_SLURM_CHROOT "$chroot_dir" \
			FORGE_STACK_SLURMDB "$dbd" \
			FORGE_STACK_SLURM_MIN_JOB_AGE "$(sed -n 's/^MinJobAge=//p' "$templates/slurm.conf.in")" \
			FORGE_SLURM_TLS_VERIFY 0
	} >"$tmp"
	mv "$tmp" "$env_file"
}

all_daemons_up() {
	local d
	for d in "${daemons[@]}"; do daemon_pid "$d" >/dev/null || return 1; done
}

log_tails() {
	local d
	for d in "${daemons[@]}"; do
		[ -f "$run/$d.log" ] || continue
		echo "--- $run/$d.log (last 15 lines)" >&2
		tail -n 15 "$run/$d.log" >&2
	done
}

wait_ready() {
	local secs=$1 t0=$SECONDS resumed=0 d bad
	while ((SECONDS - t0 < secs)); do
		for d in "${daemons[@]}"; do
			if ! daemon_alive "$d"; then
				log_tails
				die "$d exited during start"
			fi
		done
		if api_ping_ok; then
			nodes_ok && return 0
			# A drain survives restarts (slurmctld's saved node state).
			if [ "$resumed" = 0 ]; then
				bad=$(drained_nodes | paste -sd, -)
				if [ -n "$bad" ]; then
					stack_log "slurm: resuming drained nodes $bad"
					in_chroot scontrol update nodename="$bad" state=resume || true
					resumed=1
				fi
			fi
		fi
		sleep 0.5
	done
	log_tails
	die "not ready after ${secs}s: GET $rest_url/slurm/$api/ping must show responding and every node (${nodes[*]}) usable"
}

# --- one daemon's readiness ------------------------------------------------

# Controller $1 (primary or backup) answers `scontrol ping`.
ctld_ping_ok() { in_chroot scontrol ping 2>/dev/null | grep -q "^Slurmctld(${1:-primary}) at .* is UP"; }

# Any HTTP answer from the slurmrestd at $1 (default the first; its ping
# says more once slurmctld runs).
rest_answers() {
	local code
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "${1:-$rest_url}/slurm/$api/ping") || true
	[ -n "$code" ] && [ "$code" != 000 ]
}

# Node $1's SlurmdStartTime as slurmctld knows it: changes when a slurmd registers.
slurmd_start_time() {
	in_chroot scontrol show node -o "$1" 2>/dev/null | grep -o 'SlurmdStartTime=[^ ]*'
}

# Node $1 usable: IDLE, MIXED or ALLOCATED, not drained, down or not responding.
node_usable() {
	local state
	state=$(in_chroot scontrol show node -o "$1" 2>/dev/null | grep -o ' State=[^ ]*') || return 1
	[[ "$state" =~ ^\ State=(IDLE|MIXED|ALLOCATED) ]] &&
		! [[ "$state" =~ \*|DRAIN|DOWN|FAIL|INVALID|NOT_RESPONDING ]]
}

# $1 ready; for a slurmd, $2 is its node's SlurmdStartTime before the start.
daemon_ready() {
	case "$1" in
	mariadb) db_answers ;;
	slurmdbd)
		dbd_answers || return 1
		! daemon_pid slurmctld >/dev/null || ctld_dbd_connected
		;;
	slurmctld-backup) ctld_ping_ok backup ;;
	slurmctld)
		ctld_ping_ok || return 1
		local only=primary
		! daemon_pid slurmctld-backup >/dev/null || only=
		! daemon_pid slurmrestd >/dev/null || api_ping_ok "" "$only" || return 1
		daemon_pid slurmdbd >/dev/null || return 0
		ctld_dbd_connected
		;;
	slurmrestd | slurmrestd-2)
		rest_answers "$(rest_url_of "$1")" || return 1
		! daemon_pid slurmctld >/dev/null || api_ping_ok "$(rest_url_of "$1")"
		;;
	slurmd-*)
		daemon_pid slurmctld >/dev/null || return 0 # registering needs the controller
		[ "$(slurmd_start_time "${1#slurmd-}")" != "$2" ] && node_usable "${1#slurmd-}"
		;;
	esac
}

wait_daemon_ready() {
	local name=$1 secs=$2 before=${3:-} t0=$SECONDS
	while ((SECONDS - t0 < secs)); do
		if ! daemon_alive "$name"; then
			tail -n 15 "$run/$name.log" >&2
			die "$name exited during start"
		fi
		daemon_ready "$name" "$before" && return 0
		sleep 0.5
	done
	tail -n 15 "$run/$name.log" >&2
	die "$name not ready after ${secs}s"
}

# --- verbs ----------------------------------------------------------------

# A daemon of this cluster runs, and the slurm.conf it was started with is
# not the one this script writes now.
config_changed() {
	local d running=0
	for d in "${daemons[@]}"; do daemon_pid "$d" >/dev/null && running=1; done
	[ "$running" = 1 ] && [ -s "$chroot_dir/etc/slurm/slurm.conf" ] || return 1
	[ -s "$FORGE_STACK_RUN/kafka.env" ] || [ "$dbd" = 0 ] || return 1
	! cmp -s <(slurm_conf "$(hostname)") "$chroot_dir/etc/slurm/slurm.conf"
}

# Starts what is down; a daemon that runs (and every job) is left alone.
up() {
	# A chroot of an older recipe is in use: its cluster stops, and the
	# chroot is built again (its state, in the run folder, stays).
	if [ -f "$marker" ] && ! grep -qx "recipe=$recipe" "$marker" &&
		[ -n "$(mounts_below "$(readlink -m "$chroot_dir")")" ]; then
		stack_log "slurm: the chroot's recipe changed; stopping its cluster to rebuild it"
		mkdir -p "$run"
		stop_all
		unmount_all "$(readlink -f "$chroot_dir")"
	fi
	prepare
	mkdir -p "$run"
	# A cluster started from another slurm.conf (another node set) cannot
	# take this one's slurmd: it is stopped first, and started as written.
	if config_changed; then
		stack_log "slurm: slurm.conf changed (nodes or partitions); restarting the cluster"
		stop_all
	fi
	stack_apt_install acl curl jq openssl
	mkdir -p "$cluster/state" "$cluster/spool"
	chmod 0755 "$run" "$cluster"
	prepare_storage
	ensure_mounts "$(readlink -f "$chroot_dir")"
	fuse_for_users
	apptainer_binds_storage
	images_prepare
	images_install
	# Up means the daemons and the API; node states are the tests' business.
	if all_daemons_up && api_ping_ok; then
		ensure_user "$job_user2" "$job_uid2" -m -s /bin/bash
		write_token
		write_env
		stack_log "slurm: already up ($rest_url)"
		return 0
	fi
	local t0=$SECONDS d lines strays down=()
	for d in "${daemons[@]}"; do daemon_pid "$d" >/dev/null || down+=("$d"); done
	configure
	write_token
	for d in "${down[@]+"${down[@]}"}"; do
		mapfile -t strays < <(stray_pids "$d")
		if [ ${#strays[@]} -gt 0 ]; then
			stack_log "slurm: stopping a $d no pid file names (${strays[*]})"
			stop_pids 10 "${strays[@]}"
		fi
		lines=0
		[ ! -f "$run/$d.log" ] || lines=$(wc -l <"$run/$d.log")
		[ "$d" != mariadb ] || db_init
		[ "$d" != slurmdbd ] || before_dbd
		launch_daemon "$d"
		[ "$suite" != trixie ] || [[ "$d" != slurmd-* ]] || wait_slurmd_started "${d#slurmd-}" "$lines"
		# Accounting is ready before slurmctld starts (it registers with
		# slurmdbd at start).
		case "$d" in
		mariadb | slurmdbd) wait_daemon_ready "$d" 120 ;;
		esac
	done
	wait_ready 120
	if [ "$dbd" = 1 ]; then
		stack_wait_for 60 ctld_dbd_connected ||
			die "slurmctld has not registered with slurmdbd after 60 s (logs: $run/slurmctld.log, $run/slurmdbd.log)"
		dbd_register
	fi
	write_env
	stack_log "slurm: up in $((SECONDS - t0)) s, started: ${down[*]:-none} ($rest_url, $(grep '^slurm=' "$marker"))"
}

stop() {
	mkdir -p "$run"
	stop_daemon "$1"
}

# CMD in the cluster's root as the job user, as a task starts there.
as_job() {
	[ -f "$marker" ] || die "no chroot: run 'slurm.sh up' first"
	exec "${in_root[@]}" setpriv --reuid "$job_uid" --regid "$job_uid" --clear-groups \
		env -i PATH=/usr/bin:/bin HOME="/home/$job_user" LANG=C.UTF-8 "$@"
}

start() {
	local name=$1 before='' pid strays
	mkdir -p "$run"
	if pid=$(daemon_pid "$name"); then
		stack_log "slurm: $name runs (pid $pid)"
	else
		[ -s "$chroot_dir/etc/slurm/slurm.conf" ] || die "no cluster configured yet: run 'slurm.sh up' first"
		ensure_mounts "$(readlink -f "$chroot_dir")"
		mapfile -t strays < <(stray_pids "$name")
		[ ${#strays[@]} -eq 0 ] || stop_pids 10 "${strays[@]}"
		if [[ "$name" == slurmd-* ]]; then
			if daemon_pid slurmctld >/dev/null; then
				before=$(slurmd_start_time "${name#slurmd-}") || before=
			else
				stack_log "slurm: slurmctld is down: not waiting for $name to register"
			fi
		fi
		[ "$name" != mariadb ] || db_init
		[ "$name" != slurmdbd ] || before_dbd
		launch_daemon "$name"
		stack_log "slurm: started $name (pid $(cat "$run/$name.pid"))"
	fi
	wait_daemon_ready "$name" 120 "$before"
	stack_log "slurm: $name ready"
}

restart() {
	stop "$1"
	start "$1"
}

# The slurmstepd processes of node $1: each listens on a socket in the
# node's spool folder (SlurmdSpoolDir=.../spool/%n). One find over every
# process's descriptors (a fork per process took seconds on a loaded
# machine, long enough for a "failed" node's job to run to its end).
node_stepds() {
	local node=$1 inode match=() p comm
	while read -r inode; do
		match+=(${match[0]+-o} -lname "socket:\[$inode\]")
	done < <(awk -v d="/spool/$node/" 'index($8, d) { print $7 }' /proc/net/unix)
	[ ${#match[@]} -gt 0 ] || return 0
	find /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 \( "${match[@]}" \) -print 2>/dev/null |
		cut -d/ -f3 | sort -u | while read -r p; do
		{ read -r comm <"/proc/$p/comm"; } 2>/dev/null || continue
		[ "$comm" != slurmstepd ] || echo "$p"
	done
}

# "pid ppid" of every process, read without a fork per process.
process_parents() {
	local p stat
	for p in /proc/[0-9]*; do
		{ read -r stat <"$p/stat"; } 2>/dev/null || continue
		stat=${stat##*) }
		stat=${stat#* }
		echo "${p#/proc/} ${stat%% *}"
	done
}

# Pids $@ and every process below them, by one table of parents.
with_descendants() {
	process_parents | awk -v roots="$*" '
		{ parent[$1] = $2 }
		END {
			n = split(roots, r, " ")
			for (i = 1; i <= n; i++) keep[r[i]] = 1
			do {
				added = 0
				for (p in parent)
					if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; added = 1 }
			} while (added)
			for (p in keep) print p
		}'
}

# Node $1 (slurmd-<node>) dies as a power loss would: its slurmd, its
# slurmstepd and the jobs' processes under them stop at once, all of them,
# before any is killed: STOP what is found, look again (a child forked
# meanwhile is found under its stopped parent) until nothing new appears,
# then KILL the lot. slurmctld finds out only when the node stops
# answering (SlurmdTimeout): the node goes DOWN and its jobs are requeued
# (JobRequeue=1) or end NODE_FAIL. `start slurmd-<node>` brings the node
# back (ReturnToService=2).
# A daemon killed (-9) as a crash kills it: slurmctld, a slurmrestd, ...
# (its pid file goes: `start` brings it back).
fail_daemon() {
	local name=$1 pid pids=()
	if pid=$(daemon_pid "$name"); then pids+=("$pid"); fi
	mapfile -t -O "${#pids[@]}" pids < <(stray_pids "$name")
	if [ ${#pids[@]} -eq 0 ]; then
		stack_log "slurm: $name is not running"
		return 0
	fi
	stack_log "slurm: failing $name: KILL ${pids[*]}"
	kill -KILL "${pids[@]}" 2>/dev/null || true
	wait_gone 10 "${pids[@]}" || die "fail: ${pids[*]} still alive"
	rm -f "$run/$name.pid"
}

fail() {
	local name=$1 pid pids=() found=() round
	[[ "$name" == slurmd-* ]] || {
		fail_daemon "$name"
		return
	}
	if pid=$(daemon_pid "$name"); then pids+=("$pid"); fi
	mapfile -t -O "${#pids[@]}" pids < <(stray_pids "$name")
	[ ${#pids[@]} -eq 0 ] || kill -STOP "${pids[@]}" 2>/dev/null || true
	mapfile -t -O "${#pids[@]}" pids < <(node_stepds "${name#slurmd-}")
	[ ${#pids[@]} -gt 0 ] || {
		stack_log "slurm: $name is not running"
		return 0
	}
	for round in 1 2 3 4 5 6 7 8 9 10; do
		kill -STOP "${pids[@]}" 2>/dev/null || true
		mapfile -t found < <(with_descendants "${pids[@]}" | sort -u)
		[ ${#found[@]} -ne ${#pids[@]} ] || break
		pids=("${found[@]}")
	done
	stack_log "slurm: failing ${name#slurmd-}: KILL ${pids[*]} (stopped, $round rounds)"
	kill -KILL "${pids[@]}" 2>/dev/null || true
	wait_gone 10 "${pids[@]}" || die "fail: ${pids[*]} still alive"
	rm -f "$run/$name.pid"
}

down() {
	mkdir -p "$run"
	stop_all
	[ -d "$chroot_dir" ] && unmount_all "$(readlink -f "$chroot_dir")"
	rm -f "$env_file"
	stack_log "slurm: down"
}

status() {
	local d pid rc=0
	for d in "${daemons[@]}"; do
		if pid=$(daemon_pid "$d"); then
			echo "slurm $d: up (pid $pid)"
		else
			echo "slurm $d: down"
			rc=1
		fi
	done
	if api_ping_ok; then
		echo "slurm api: up ($rest_url/slurm/$api/ping responding)"
	else
		echo "slurm api: down ($rest_url)"
		rc=1
	fi
	if [ "$dbd" = 1 ]; then
		if ! db_answers; then
			echo "slurm accounting: down (MariaDB on 127.0.0.1:$db_port does not answer)"
			rc=1
		elif ! dbd_answers; then
			echo "slurm accounting: down (slurmdbd on 127.0.0.1:$dbd_port does not answer)"
			rc=1
		elif ! ctld_dbd_connected; then
			echo "slurm accounting: down (slurmctld is not registered with slurmdbd)"
			rc=1
		else
			echo "slurm accounting: up (MariaDB 127.0.0.1:$db_port, slurmdbd 127.0.0.1:$dbd_port, slurmctld registered)"
		fi
	fi
	return "$rc"
}

usage() {
	local IFS='|'
	echo "usage: $0 prepare|up|down|status | stop|start|restart|fail ${daemons[*]} | as-job CMD..." >&2
	exit 2
}

verb=${1:-status}
case "$verb" in
prepare | up | down)
	mkdir -p "$FORGE_CACHE_DIR"
	exec 9>"$FORGE_CACHE_DIR/slurm-$suite.lock"
	flock 9
	"$verb"
	;;
stop | start | restart | fail)
	if [ $# -ne 2 ] || [[ " ${daemons[*]} " != *" $2 "* ]]; then
		usage
	fi
	mkdir -p "$FORGE_CACHE_DIR"
	exec 9>"$FORGE_CACHE_DIR/slurm-$suite.lock"
	flock 9
	"$verb" "$2"
	;;
as-job)
	[ $# -ge 2 ] || usage
	shift
	as_job "$@"
	;;
status) status ;;
*) usage ;;
esac
