# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Shared by the stack's component scripts: where caches and runtime files live,
# and small helpers. Sourced, never run.
#
# FORGE_CACHE_DIR  survives between runs and clones: built chroots, jars, librdkafka.
# FORGE_STACK_RUN  this machine's running stack: pids, logs, data, the storage root.
# FORGE_STACK_ENV  the env file `up` writes (default $FORGE_STACK_RUN/stack.env).
: "${FORGE_CACHE_DIR:=/var/cache/forge-worker}"
: "${FORGE_STACK_RUN:=/var/tmp/forge-stack}"
: "${FORGE_STACK_ENV:=$FORGE_STACK_RUN/stack.env}"
export FORGE_CACHE_DIR FORGE_STACK_RUN FORGE_STACK_ENV

stack_log() { printf '[stack %s] %s\n' "$(date +%T)" "$*" >&2; }

# apt-get that waits for another apt to finish instead of failing on the lock.
stack_apt_install() {
	local missing=()
	local p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	stack_log "apt-get install ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -qq update >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -qq \
		install --no-install-recommends "${missing[@]}" >/dev/null
}

# The Debian mirror this machine is already configured with (never hard-coded here).
stack_debian_mirror() {
	local uri
	uri=$(grep -hoE '^(URIs:|deb) +[a-z]+://[^ ]+/debian/?( |$)' \
		/etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
		head -n1 | awk '{print $2}')
	[ -n "$uri" ] || { echo "no Debian mirror configured in /etc/apt" >&2; return 1; }
	echo "${uri%/}"
}

# True when a pid file names a live process.
stack_pid_alive() {
	local f=$1 pid
	[ -s "$f" ] || return 1
	pid=$(cat "$f")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# Wait up to $1 seconds for command "$2..." to succeed.
stack_wait_for() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 2; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	return 1
}

# Closes every file descriptor above 2 of the calling (sub)shell: a daemon
# started by the stack must not keep a caller's descriptors, a lock a test
# runner holds (flock) or a pipe a CI step waits on to end.
stack_close_fds() {
	local fd
	for fd in /proc/"$BASHPID"/fd/*; do
		fd=${fd##*/}
		[[ "$fd" =~ ^[0-9]+$ ]] && [ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null
	done
	return 0
}
