#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The stack's TLS front before slurmrestd: nginx (Debian's package), as a
# site puts one before it (slurmrestd's own TLS needs a plugin Debian does
# not build). It listens on https://localhost:16821 (loopback) and proxies to
# the plain slurmrestd on 127.0.0.1:16820 over kept connections. slurmrestd
# may stop and start under it (the chaos and ops scenarios do): the front
# answers 502 meanwhile and goes on. A second listener,
# https://localhost:16825, balances over both slurmrestd of the cluster
# (16820 and slurmrestd-2's 16824), as a site's load balancer does: one
# that refuses is left for the other (issue 39); the first listener keeps
# to 16820 alone, so a scenario stopping slurmrestd stops what it serves.
# The certificates are made once by
# openssl and cached:
#
#   $FORGE_CACHE_DIR/tls-front/ca.pem, ca.key        the stack's CA
#   $FORGE_CACHE_DIR/tls-front/server.pem, .key      the front's certificate,
#       from that CA, for DNS:localhost only (no IP SAN: https://127.0.0.1
#       is a certificate for another name)
#   $FORGE_CACHE_DIR/tls-front/other-ca.pem, .key    an unrelated CA (the
#       wrong-CA scenario), and other-server.pem/.key, a localhost
#       certificate from it
#
#   tls-front.sh prepare   install nginx and openssl, make the certificates
#   tls-front.sh up        prepare, start nginx unless it runs, wait until it
#                          answers, write tls-front.env (its variables come
#                          after slurm.env's in the stack's env file)
#   tls-front.sh down      stop nginx by pid (the certificates stay)
#   tls-front.sh status    one line; 0 when it runs and answers TLS
#   tls-front.sh stop|start|restart tls-front
#   tls-front.sh rotate [--other-ca]   a new key and certificate for the
#                          front, from the stack's CA (or, --other-ca, from
#                          the unrelated one), put in place and nginx told
#                          to reload them (SIGHUP: new connections get the
#                          new certificate; kept ones end gracefully); it
#                          returns once the workers of before are gone
#
# Run files: $FORGE_STACK_RUN/tls-front/ (nginx.conf, nginx.pid, error.log,
# access.log, nginx's temp folders).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$here/common.sh"

port=16821
upstream=127.0.0.1:16820
upstream2=127.0.0.1:16824
ha_port=16825
ha_url="https://localhost:$ha_port"
run="$FORGE_STACK_RUN/tls-front"
certs="$FORGE_CACHE_DIR/tls-front"
env_file="$FORGE_STACK_RUN/tls-front.env"
pid_file="$run/nginx.pid"
url="https://localhost:$port"

die() {
	stack_log "tls-front: $*"
	exit 1
}

# --- certificates -----------------------------------------------------------

# A CA ($1: file stem, $2: its name), made unless it exists.
make_ca() {
	local stem=$1 name=$2
	[ -s "$certs/$stem.pem" ] && [ -s "$certs/$stem.key" ] && return 0
	(umask 077 && openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 3650 \
		-subj "/CN=$name" -keyout "$certs/$stem.key.tmp" -out "$certs/$stem.pem.tmp" \
		-addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null)
	mv "$certs/$stem.key.tmp" "$certs/$stem.key"
	chmod 0644 "$certs/$stem.pem.tmp"
	mv "$certs/$stem.pem.tmp" "$certs/$stem.pem"
}

# A new key and certificate for localhost ($2: stem) signed by CA $1,
# written beside their final names and renamed into place (key first).
make_server() {
	local ca=$1 stem=$2 tmp
	tmp=$(mktemp -d "$certs/.new.XXXXXX")
	(umask 077 && openssl req -newkey rsa:2048 -nodes -sha256 -subj /CN=localhost \
		-keyout "$tmp/key" -out "$tmp/csr" 2>/dev/null)
	printf '%s\n' 'subjectAltName=DNS:localhost' 'extendedKeyUsage=serverAuth' \
		'basicConstraints=CA:FALSE' >"$tmp/ext"
	openssl x509 -req -in "$tmp/csr" -CA "$certs/$ca.pem" -CAkey "$certs/$ca.key" \
		-set_serial "0x$(openssl rand -hex 16)" -days 825 -sha256 \
		-extfile "$tmp/ext" -out "$tmp/pem" 2>/dev/null
	chmod 0644 "$tmp/pem"
	mv "$tmp/key" "$certs/$stem.key"
	mv "$tmp/pem" "$certs/$stem.pem"
	rm -rf "$tmp"
}

ensure_certs() {
	mkdir -p "$certs"
	chmod 0755 "$certs"
	make_ca ca "forge-stack test CA"
	make_ca other-ca "forge-stack unrelated CA"
	# a rotation to the other CA (the scenario's) is undone here
	if ! openssl verify -CAfile "$certs/ca.pem" "$certs/server.pem" >/dev/null 2>&1 ||
		[ ! -s "$certs/server.key" ]; then
		make_server ca server
	fi
	[ -s "$certs/other-server.pem" ] || make_server other-ca other-server
}

prepare() {
	stack_apt_install nginx openssl curl
	ensure_certs
}

# --- nginx ------------------------------------------------------------------

# One TLS listener's server block: port $1, proxying to upstream $2.
server_block() {
	cat <<-EOF
		    server {
		        listen 127.0.0.1:$1 ssl;
		        server_name localhost;
		        ssl_certificate $certs/server.pem;
		        ssl_certificate_key $certs/server.key;
		        ssl_protocols TLSv1.2 TLSv1.3;
		        keepalive_timeout 75s;
		        keepalive_requests 100000;
		        client_max_body_size 64m;
		        client_body_buffer_size 1m;
		        location / {
		            proxy_pass http://$2;
		            proxy_http_version 1.1;
		            proxy_set_header Connection "";
		            proxy_set_header Host \$host;
		            proxy_buffering off;
		            proxy_read_timeout 300s;
		            proxy_send_timeout 300s;
		        }
		    }
	EOF
}

write_conf() {
	mkdir -p "$run/tmp"
	chown nobody:nogroup "$run/tmp"
	cat >"$run/nginx.conf.tmp" <<-EOF
		# written by tests/e2e/stack.d/tls-front.sh
		daemon off;
		worker_processes 1;
		pid $pid_file;
		error_log $run/error.log notice;
		events { worker_connections 1024; }
		http {
		    access_log $run/access.log;
		    client_body_temp_path $run/tmp/body;
		    proxy_temp_path $run/tmp/proxy;
		    fastcgi_temp_path $run/tmp/fastcgi;
		    uwsgi_temp_path $run/tmp/uwsgi;
		    scgi_temp_path $run/tmp/scgi;
		    upstream slurmrestd {
		        server $upstream;
		        keepalive 32;
		        keepalive_timeout 60s;
		    }
		    # both slurmrestd: a refused connection moves a request to the
		    # other (nginx never passes a POST on once it was sent)
		    upstream slurmrestd_ha {
		        server $upstream max_fails=1 fail_timeout=5s;
		        server $upstream2 max_fails=1 fail_timeout=5s;
		        keepalive 32;
		        keepalive_timeout 60s;
		    }
		$(server_block "$port" slurmrestd)
		$(server_block "$ha_port" slurmrestd_ha)
		}
	EOF
	mv "$run/nginx.conf.tmp" "$run/nginx.conf"
}

nginx_pid() {
	local pid
	[ -s "$pid_file" ] || return 1
	pid=$(cat "$pid_file")
	[[ "$pid" =~ ^[0-9]+$ ]] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = nginx ] || return 1
	echo "$pid"
}

# A TLS handshake with the stack's CA and any HTTP answer (502 while
# slurmrestd is away is an answer).
answers() {
	local code
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
		--cacert "$certs/ca.pem" "$url/") || true
	[ -n "$code" ] && [ "$code" != 000 ]
}

start() {
	local pid
	mkdir -p "$run"
	if pid=$(nginx_pid); then
		stack_log "tls-front: runs (pid $pid)"
	else
		[ -s "$certs/server.pem" ] || die "no certificates yet: run 'tls-front.sh up' first"
		write_conf
		nginx -t -q -c "$run/nginx.conf" -p "$run" -e "$run/error.log" ||
			die "nginx refuses $run/nginx.conf"
		printf '=== %s started by tls-front.sh\n' "$(date -u +%FT%TZ)" >>"$run/nginx.log"
		(
			stack_close_fds
			exec setsid nginx -c "$run/nginx.conf" -p "$run" -e "$run/error.log" \
				</dev/null >>"$run/nginx.log" 2>&1
		) &
		echo $! >"$pid_file"
		stack_log "tls-front: started nginx (pid $!)"
	fi
	stack_wait_for 30 answers || {
		tail -n 15 "$run/error.log" >&2 || true
		die "nginx does not answer on $url after 30 s"
	}
}

stop() {
	local pid i
	if ! pid=$(nginx_pid); then
		stack_log "tls-front: not running"
		rm -f "$pid_file"
		return 0
	fi
	stack_log "tls-front: stopping nginx (pid $pid)"
	kill -QUIT "$pid" 2>/dev/null || true # graceful: kept connections end
	for ((i = 0; i < 40; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.25
	done
	! kill -0 "$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
	rm -f "$pid_file"
}

write_env() {
	local tmp="$env_file.tmp"
	{
		echo "# the TLS front before slurmrestd (tests/e2e/stack.d/tls-front.sh)"
		printf 'export %s=%q\n' \
			FORGE_SLURM_REST_URL "$url" \
			FORGE_SLURM_TLS_VERIFY 1 \
			FORGE_SLURM_TLS_CA_FILE "$certs/ca.pem" \
			FORGE_STACK_SLURM_PLAIN_URL "http://$upstream" \
			FORGE_STACK_TLS_FRONT_PORT "$port" \
			FORGE_STACK_TLS_HA_URL "$ha_url" \
			FORGE_STACK_TLS_SERVER_CERT "$certs/server.pem" \
			FORGE_STACK_TLS_OTHER_CA_FILE "$certs/other-ca.pem"
	} >"$tmp"
	mv "$tmp" "$env_file"
}

up() {
	prepare
	start
	write_env
	stack_log "tls-front: up ($url -> http://$upstream)"
}

down() {
	stop
	rm -f "$env_file"
}

status() {
	local pid
	if pid=$(nginx_pid) && answers; then
		echo "tls-front nginx: up (pid $pid, $url -> http://$upstream)"
		return 0
	fi
	echo "tls-front nginx: down ($url)"
	return 1
}

# The pids of $1's children.
children_of() {
	local p stat
	for p in /proc/[0-9]*; do
		{ read -r stat <"$p/stat"; } 2>/dev/null || continue
		stat=${stat##*) }
		stat=${stat#* }
		[ "${stat%% *}" != "$1" ] || echo "${p#/proc/}"
	done
}

rotate() {
	local ca=ca pid old o i alive
	[ "${1:-}" != --other-ca ] || ca=other-ca
	pid=$(nginx_pid) || die "rotate: nginx is not running"
	make_server "$ca" server
	mapfile -t old < <(children_of "$pid")
	kill -HUP "$pid"
	# Returns once the workers of before are gone: they close their idle
	# kept connections and finish the requests under way, so from then on
	# every request comes through a connection made with the new
	# certificate (a client's kept connection would have been served by
	# the old one).
	for ((i = 0; i < 300; i++)); do
		alive=
		for o in "${old[@]}"; do kill -0 "$o" 2>/dev/null && alive=1; done
		[ -n "$alive" ] || break
		sleep 0.1
	done
	[ -z "$alive" ] || stack_log "tls-front: workers of before still serve after 30 s"
	stack_log "tls-front: rotated: a new certificate from $ca (pid $pid reloaded)"
}

usage() {
	echo "usage: $0 prepare|up|down|status | stop|start|restart tls-front | rotate [--other-ca]" >&2
	exit 2
}

verb=${1:-status}
case "$verb" in
prepare | up | down | rotate)
	mkdir -p "$FORGE_CACHE_DIR" "$run"
	exec 9>"$FORGE_CACHE_DIR/tls-front.lock"
	flock 9
	shift
	"$verb" "$@"
	;;
stop | start | restart)
	if [ $# -ne 2 ] || [ "$2" != tls-front ]; then usage; fi
	mkdir -p "$FORGE_CACHE_DIR" "$run"
	exec 9>"$FORGE_CACHE_DIR/tls-front.lock"
	flock 9
	if [ "$verb" = restart ]; then
		stop
		start
	else
		"$verb"
	fi
	;;
status) status ;;
*) usage ;;
esac
