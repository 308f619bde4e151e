#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The e2e stack's Kafka: one Apache Kafka 4 broker (KRaft, combined broker and
# controller, node 1) bound to 127.0.0.1, run from the Maven Central jars that
# tests/e2e/pom.xml pins.
#
# Secured by default (issue 27): the env file points the worker at a SASL_SSL
# listener (127.0.0.1:19094, SCRAM-SHA-512, a broker certificate the stack's
# own CA signs, made once under $FORGE_CACHE_DIR/kafka/tls) behind KRaft's
# StandardAuthorizer, with the ACLs of deploy/kafka/acls.tsv for the SCRAM
# users forge-worker (role worker), forge-operator (operator), platform
# (platform), slurm-jobcomp (slurm: the stack's slurmctld, whose
# jobcomp/kafka plugin writes forge.jobcomp, stack.d/slurm.sh) and outsider
# (no ACL). The PLAINTEXT listener (127.0.0.1:19092)
# and the CONTROLLER listener stay: their principal, User:ANONYMOUS, is a super
# user. PLAINTEXT is the stack's internal/admin listener (inter-broker, topic
# and ACL setup, the harness's admin client) and the plaintext smoke
# scenario's.
#
#   kafka.sh prepare  copy the jars to $FORGE_CACHE_DIR/kafka/libs and compile
#                     tests/e2e/kafka/StackAdmin.java (each only when missing)
#   kafka.sh up       prepare, start the broker unless it runs, wait until it
#                     answers metadata, create the project's topics (the
#                     five of forge.launch.*, and forge.jobcomp: Slurm's
#                     job start and end records, 3 partitions), write
#                     $FORGE_STACK_RUN/kafka.env
#   kafka.sh down     stop the broker by pid (TERM, KILL after 30 s); the data
#                     directory and the caches stay
#   kafka.sh status   one line; exit 0 only when the broker answers metadata
#   kafka.sh stop     the broker alone: as down
#   kafka.sh start    as up (a running broker is left alone)
#   kafka.sh restart  down, then up: the data directory stays, so topics,
#                     committed offsets and transactions survive it
#   kafka.sh renew-cert  a new broker key and certificate (same CA, same
#                     names) in $FORGE_STACK_RUN/kafka/tls/, loaded by the
#                     running broker through its dynamic
#                     listener.name.sasl_ssl.ssl.keystore.location (no restart)
#   kafka.sh restore-cert  delete that dynamic setting: back to the cached
#                     certificate (reloaded the same way)
#
# Files: $FORGE_STACK_RUN/kafka/{kafka.pid,server.properties,cluster.id,data/,logs/}
# (logs/server.log is the broker's log, logs/tools.log the admin tools' log);
# users/<user>.password (0600, random, made once: the SCRAM passwords);
# $FORGE_CACHE_DIR/kafka/tls/{ca.pem,ca.key,broker.p12,keystore.pass} (made
# once; broker.p12 holds the broker's key and its certificate for
# DNS:localhost and IP:127.0.0.1).
#
# Environment: FORGE_STACK_PARTITIONS (default 6) partitions per topic of
# the worker's (forge.jobcomp has 3, whatever it says);
# FORGE_STACK_KAFKA_HEAP (default 512m) the broker's -Xmx.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
e2e=$(dirname "$here")
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$here/common.sh"

pom=$e2e/pom.xml
kafka_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")
cache=$FORGE_CACHE_DIR/kafka
libs=$cache/libs
tools=$cache/tools
m2=$FORGE_CACHE_DIR/m2
run=$FORGE_STACK_RUN/kafka
data=$run/data
pidfile=$run/kafka.pid
port=19092
cport=19093
sport=19094
bootstrap=127.0.0.1:$port
secured=127.0.0.1:$sport
tls=$cache/tls
users=$run/users
acl_file=$(cd "$e2e/../.." && pwd)/deploy/kafka/acls.tsv
# SCRAM user of each role of acls.tsv; outsider has no role: no ACL at all.
roles=(worker=forge-worker operator=forge-operator platform=platform slurm=slurm-jobcomp)
scram_users=(forge-worker forge-operator platform slurm-jobcomp outsider)
partitions=${FORGE_STACK_PARTITIONS:-6}
heap=${FORGE_STACK_KAFKA_HEAP:-512m}
ready_timeout=${FORGE_STACK_KAFKA_TIMEOUT:-120}

topic_requests=forge.launch.requests
topic_state=forge.launch.state
topic_status=forge.launch.status
topic_logs=forge.launch.logs
topic_dlq=forge.launch.dlq
# Slurm's job completion records (jobcomp/kafka: a start and an end record
# of each job, one per het component; no key), which the workers read.
topic_jobcomp=forge.jobcomp
jobcomp_partitions=3
# NAME[:KEY=VALUE,...] for StackAdmin ensure. The state topic is compacted and
# co-partitioned with the requests (all topics get the same partition count);
# its records carry their request (up to 1 MiB), hence 4 MiB messages.
topic_specs=(
	"$topic_requests"
	"$topic_state:cleanup.policy=compact,max.message.bytes=4194304"
	"$topic_status"
	"$topic_logs"
	"$topic_dlq"
	"$topic_jobcomp:partitions=$jobcomp_partitions"
)

die() {
	stack_log "kafka: $*"
	exit 1
}

# --- prepare ------------------------------------------------------------------

prepare() {
	[ -n "$kafka_version" ] || die "no <kafka.version> in $pom"
	if ! command -v javac >/dev/null || ! command -v mvn >/dev/null; then
		stack_apt_install openjdk-17-jdk-headless maven
	fi
	mkdir -p "$cache"
	exec 8>"$cache/.lock"
	flock 8

	local want have
	want="kafka $kafka_version pom $(sha256sum "$pom" | cut -d' ' -f1)"
	have=$(cat "$libs/.forge-prepared" 2>/dev/null || true)
	if [ "$have" != "$want" ]; then
		stack_log "kafka: copying the jars of Kafka $kafka_version to $libs (maven local repository: $m2)"
		rm -rf "$libs.tmp"
		# The local repository lives in the stack's cache, like everything
		# else the stack downloads: one directory to keep or to wipe.
		mvn -B -q -Dstyle.color=never -f "$pom" -Dmaven.repo.local="$m2" \
			dependency:copy-dependencies -DincludeScope=runtime \
			-DoutputDirectory="$libs.tmp" >"$cache/mvn.log" 2>&1 || {
			cat "$cache/mvn.log" >&2
			die "mvn dependency:copy-dependencies failed"
		}
		echo "$want" >"$libs.tmp/.forge-prepared"
		rm -rf "$libs"
		mv "$libs.tmp" "$libs"
	fi

	local src=$e2e/kafka/StackAdmin.java
	want="$want src $(sha256sum "$src" | cut -d' ' -f1)"
	have=$(cat "$tools/.forge-prepared" 2>/dev/null || true)
	if [ "$have" != "$want" ]; then
		stack_log "kafka: compiling $src"
		rm -rf "$tools.tmp"
		mkdir -p "$tools.tmp"
		javac -nowarn -cp "$libs/*" -d "$tools.tmp" "$src" || die "javac $src failed"
		echo "$want" >"$tools.tmp/.forge-prepared"
		rm -rf "$tools"
		mv "$tools.tmp" "$tools"
	fi
	[ -s "$tls/broker.p12" ] || make_tls
	exec 8>&-
}

# The stack's CA and the broker's certificate (once; cached like the jars).
make_tls() {
	stack_log "kafka: making the CA and the broker certificate in $tls"
	rm -rf "$tls.tmp"
	mkdir -p "$tls.tmp"
	(
		cd "$tls.tmp"
		umask 077
		# (set -e does not hold in a subshell that || follows: &&)
		openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=forge e2e stack CA" \
			-keyout ca.key -out ca.pem 2>/dev/null &&
			head -c 24 /dev/urandom | base64 | tr -d '/+=' >keystore.pass &&
			broker_cert ca.pem ca.key keystore.pass broker.p12 &&
			chmod 644 ca.pem
	) || die "making the TLS material in $tls.tmp failed"
	rm -rf "$tls"
	mv "$tls.tmp" "$tls"
}

# broker_cert CA_PEM CA_KEY PASS_FILE OUT_P12: a new key and a certificate
# for DNS:localhost and IP:127.0.0.1 the CA signs, in a PKCS12 keystore.
broker_cert() {
	local dir
	dir=$(mktemp -d)
	openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
		-keyout "$dir/key.pem" -out "$dir/req.pem" 2>/dev/null &&
		printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$dir/ext" &&
		openssl x509 -req -in "$dir/req.pem" -CA "$1" -CAkey "$2" -CAcreateserial \
			-days 825 -extfile "$dir/ext" -out "$dir/cert.pem" 2>/dev/null &&
		openssl pkcs12 -export -in "$dir/cert.pem" -inkey "$dir/key.pem" -certfile "$1" \
			-name broker -passout "file:$3" -out "$4"
	local rc=$?
	rm -rf "$dir"
	return "$rc"
}

# One random password per SCRAM user, made once, owner-only (the worker
# refuses a password file others can read).
ensure_passwords() {
	local u
	mkdir -p "$users"
	chmod 700 "$users"
	for u in "${scram_users[@]}"; do
		[ -s "$users/$u.password" ] && continue
		(umask 077 && head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$users/$u.password")
	done
	chmod 600 "$users"/*.password
}

# --- helpers ------------------------------------------------------------------

# A short-lived JVM for the Kafka tools; it logs to logs/tools.log.
kafka_java() {
	mkdir -p "$run/logs"
	java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto \
		-Dlog4j2.configurationFile="$e2e/kafka/log4j2.yaml" \
		-Dforge.kafka.log="$run/logs/tools.log" \
		-cp "$tools:$libs/*" "$@"
}

stack_admin() { kafka_java StackAdmin "$bootstrap" "$@"; }

# The pid of our broker, if it runs (the pid file names a live kafka.Kafka).
broker_pid() {
	local pid
	stack_pid_alive "$pidfile" || return 1
	pid=$(cat "$pidfile")
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q ' kafka\.Kafka ' || return 1
	echo "$pid"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The tail of the broker's logs since the last start (start_broker marks it).
show_logs() {
	local f from
	for f in "$run/logs/server.log" "$run/logs/kafka.out"; do
		[ -s "$f" ] || continue
		from=$(grep -n '^=== .* kafka\.sh up$' "$f" | tail -n1 | cut -d: -f1)
		echo "--- $f (last 40 lines since this start)" >&2
		tail -n "+${from:-1}" "$f" | tail -n 40 >&2
	done
}

write_config() {
	# owner-only: it holds the keystore's password
	(umask 077 && : >"$run/server.properties")
	cat >"$run/server.properties" <<-EOF
		# written by tests/e2e/stack.d/kafka.sh up
		process.roles=broker,controller
		node.id=1
		controller.quorum.voters=1@127.0.0.1:$cport
		# PLAINTEXT: the stack's internal/admin listener and the plaintext
		# smoke scenario's; SASL_SSL: every client of the secured stack.
		listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport,SASL_SSL://127.0.0.1:$sport
		advertised.listeners=PLAINTEXT://127.0.0.1:$port,SASL_SSL://$secured
		listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL
		inter.broker.listener.name=PLAINTEXT
		controller.listener.names=CONTROLLER
		sasl.enabled.mechanisms=SCRAM-SHA-512
		listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
		listener.name.sasl_ssl.ssl.keystore.type=PKCS12
		listener.name.sasl_ssl.ssl.keystore.location=$tls/broker.p12
		listener.name.sasl_ssl.ssl.keystore.password=$(cat "$tls/keystore.pass")
		listener.name.sasl_ssl.ssl.key.password=$(cat "$tls/keystore.pass")
		# ACLs (deploy/kafka/acls.tsv); PLAINTEXT's and CONTROLLER's
		# principal (ANONYMOUS) may do everything.
		authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
		super.users=User:ANONYMOUS
		allow.everyone.if.no.acl.found=false
		log.dirs=$data
		num.partitions=$partitions
		default.replication.factor=1
		min.insync.replicas=1
		offsets.topic.replication.factor=1
		offsets.topic.num.partitions=10
		transaction.state.log.replication.factor=1
		transaction.state.log.min.isr=1
		transaction.state.log.num.partitions=10
		share.coordinator.state.topic.replication.factor=1
		share.coordinator.state.topic.min.isr=1
		group.initial.rebalance.delay.ms=0
		num.network.threads=2
		num.io.threads=4
		num.recovery.threads.per.data.dir=1
		log.cleaner.threads=1
	EOF
}

# Reuse the data directory when it was formatted with the cluster id we stored;
# otherwise wipe and format it with a new id.
ensure_storage() {
	local id=
	[ -s "$run/cluster.id" ] && id=$(cat "$run/cluster.id")
	if [ -n "$id" ] && grep -qx "cluster.id=$id" "$data/meta.properties" 2>/dev/null; then
		return 0
	fi
	# A Kafka Uuid: 16 random bytes, URL-safe base64 without padding.
	id=-
	while [ "${id:0:1}" = - ]; do
		id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22)
	done
	stack_log "kafka: formatting $data (cluster id $id)"
	rm -rf "$data"
	kafka_java kafka.tools.StorageTool format -t "$id" -c "$run/server.properties" >"$run/logs/format.log" 2>&1 || {
		cat "$run/logs/format.log" >&2
		die "formatting $data failed"
	}
	echo "$id" >"$run/cluster.id"
}

start_broker() {
	stack_log "kafka: starting Kafka $kafka_version on $bootstrap (log: $run/logs/server.log)"
	local mark
	mark="=== $(date -u +%FT%TZ) kafka.sh up"
	echo "$mark" >>"$run/logs/kafka.out"
	echo "$mark" >>"$run/logs/server.log"
	# In its own session, cwd $run, with none of our descriptors; $! is the
	# JVM's pid (the subshell execs setsid, which execs java: a background
	# child of a script leads no process group).
	cd "$run"
	(
		stack_close_fds
		exec setsid nohup java "-Xmx$heap" -Xms128m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
			-Djava.awt.headless=true \
			-Dlog4j2.configurationFile="$e2e/kafka/log4j2.yaml" \
			-Dforge.kafka.log="$run/logs/server.log" \
			-Dkafka.logs.dir="$run/logs" \
			-cp "$libs/*" kafka.Kafka "$run/server.properties" \
			>>"$run/logs/kafka.out" 2>&1 </dev/null
	) &
	echo $! >"$pidfile"
}

write_env() {
	local tmp=$FORGE_STACK_RUN/kafka.env.tmp
	# The worker's settings: the SASL_SSL listener as forge-worker. The
	# FORGE_STACK_KAFKA_* are the tests': the admin (plaintext) bootstrap,
	# each principal's user and password file.
	cat >"$tmp" <<-EOF
		export FORGE_KAFKA_BROKERS=$secured
		export FORGE_KAFKA_SECURITY_PROTOCOL=SASL_SSL
		export FORGE_KAFKA_SASL_MECHANISM=SCRAM-SHA-512
		export FORGE_KAFKA_SASL_USERNAME=forge-worker
		export FORGE_KAFKA_SASL_PASSWORD_FILE=$users/forge-worker.password
		export FORGE_KAFKA_SSL_CA_FILE=$tls/ca.pem
		export FORGE_STACK_KAFKA_PLAINTEXT=$bootstrap
		export FORGE_STACK_KAFKA_SASL_SSL=$secured
		export FORGE_STACK_KAFKA_CA_FILE=$tls/ca.pem
		export FORGE_STACK_KAFKA_WORKER_USER=forge-worker
		export FORGE_STACK_KAFKA_WORKER_PASSWORD_FILE=$users/forge-worker.password
		export FORGE_STACK_KAFKA_OPERATOR_USER=forge-operator
		export FORGE_STACK_KAFKA_OPERATOR_PASSWORD_FILE=$users/forge-operator.password
		export FORGE_STACK_KAFKA_PLATFORM_USER=platform
		export FORGE_STACK_KAFKA_PLATFORM_PASSWORD_FILE=$users/platform.password
		export FORGE_STACK_KAFKA_SLURM_USER=slurm-jobcomp
		export FORGE_STACK_KAFKA_SLURM_PASSWORD_FILE=$users/slurm-jobcomp.password
		export FORGE_STACK_KAFKA_OUTSIDER_USER=outsider
		export FORGE_STACK_KAFKA_OUTSIDER_PASSWORD_FILE=$users/outsider.password
		export FORGE_KAFKA_TOPIC_REQUESTS=$topic_requests
		export FORGE_KAFKA_TOPIC_STATUS=$topic_status
		export FORGE_KAFKA_TOPIC_LOGS=$topic_logs
		export FORGE_KAFKA_TOPIC_STATE=$topic_state
		export FORGE_KAFKA_TOPIC_DLQ=$topic_dlq
		export FORGE_KAFKA_JOBCOMP_TOPIC=$topic_jobcomp
		export FORGE_STACK_KAFKA_PARTITIONS=$partitions
		export FORGE_STACK_KAFKA_LIBS=$libs
		export FORGE_STACK_KAFKA_LOG=$run/logs/server.log
	EOF
	mv "$tmp" "$FORGE_STACK_RUN/kafka.env"
}

# --- verbs --------------------------------------------------------------------

up() {
	prepare
	mkdir -p "$run/logs"
	exec 9>"$run/.lock"
	flock 9
	ensure_passwords
	local pid admin_pid out rc line u opts=()
	for u in "${scram_users[@]}"; do opts+=(--scram "$u=$users/$u.password"); done
	opts+=(--acls "$acl_file")
	for u in "${roles[@]}"; do opts+=(--role "$u"); done
	opts+=(--set "FORGE_KAFKA_TOPIC_REQUESTS=$topic_requests" --set "FORGE_KAFKA_TOPIC_STATE=$topic_state"
		--set "FORGE_KAFKA_TOPIC_STATUS=$topic_status" --set "FORGE_KAFKA_TOPIC_LOGS=$topic_logs"
		--set "FORGE_KAFKA_TOPIC_DLQ=$topic_dlq" --set "FORGE_KAFKA_JOBCOMP_TOPIC=$topic_jobcomp"
		--set "FORGE_KAFKA_GROUP_ID=forge-worker")
	if pid=$(broker_pid); then
		stack_log "kafka: running (pid $pid)"
	else
		rm -f "$pidfile"
		port_in_use "$port" && die "127.0.0.1:$port is in use by a process that is not our broker"
		port_in_use "$cport" && die "127.0.0.1:$cport is in use by a process that is not our broker"
		port_in_use "$sport" && die "127.0.0.1:$sport is in use by a process that is not our broker"
		write_config
		ensure_storage
		start_broker
		pid=$(cat "$pidfile")
	fi

	# One JVM waits for metadata and creates the topics; stop waiting early
	# when the broker dies.
	out=$run/logs/admin.out
	stack_admin ensure "$ready_timeout" "$partitions" "${opts[@]}" "${topic_specs[@]}" >"$out" 2>&1 9>&- &
	admin_pid=$!
	while kill -0 "$admin_pid" 2>/dev/null; do
		if ! kill -0 "$pid" 2>/dev/null; then
			kill "$admin_pid" 2>/dev/null || true
			wait "$admin_pid" || true
			show_logs
			die "the broker (pid $pid) exited during startup"
		fi
		sleep 0.2
	done
	rc=0
	wait "$admin_pid" || rc=$?
	if [ "$rc" -eq 3 ]; then
		cat "$out" >&2
		die "topic, user or ACL setup failed on $bootstrap (a changed FORGE_STACK_PARTITIONS needs a fresh data directory: kafka.sh down; rm -rf $data; kafka.sh up)"
	elif [ "$rc" -ne 0 ]; then
		cat "$out" >&2
		show_logs
		die "broker on $bootstrap (pid $pid) did not answer metadata within ${ready_timeout}s"
	fi
	while read -r line; do stack_log "kafka: $line"; done <"$out"
	write_env
	stack_log "kafka: up on $bootstrap and $secured (SASL_SSL) (pid $pid)"
}

# A renewed broker certificate (new key, same CA and names), loaded live.
renew_cert() {
	local out
	broker_pid >/dev/null || die "the broker does not run"
	mkdir -p "$run/tls"
	out=$run/tls/broker-$(date +%s%N).p12
	broker_cert "$tls/ca.pem" "$tls/ca.key" "$tls/keystore.pass" "$out" ||
		die "making a renewed certificate failed"
	stack_admin keystore 30 SASL_SSL "$out" >>"$run/logs/admin.out" 2>&1 ||
		die "the broker refused the renewed keystore $out (see $run/logs/tools.log)"
	stack_log "kafka: the SASL_SSL listener now serves $out"
	echo "$out"
}

restore_cert() {
	stack_admin keystore 30 SASL_SSL - >>"$run/logs/admin.out" 2>&1 ||
		die "deleting the dynamic keystore location failed (see $run/logs/tools.log)"
	rm -f "$run"/tls/broker-*.p12
	stack_log "kafka: the SASL_SSL listener serves $tls/broker.p12 again"
}

down() {
	local pid i
	if pid=$(broker_pid); then
		stack_log "kafka: stopping pid $pid"
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < 300; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			stack_log "kafka: pid $pid still alive after 30 s; KILL"
			kill -KILL "$pid" 2>/dev/null || true
			while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
		fi
	else
		stack_log "kafka: not running"
	fi
	rm -f "$pidfile"
}

status() {
	local pid out id n
	pid=$(broker_pid) || pid=none
	if port_in_use "$port" && [ -d "$tools" ] && out=$(stack_admin ready 5 2>/dev/null); then
		read -r _ id n <<<"$out"
		echo "kafka: up on $bootstrap (pid $pid, cluster $id, $n broker)"
		return 0
	fi
	echo "kafka: down (pid $pid; $bootstrap does not answer metadata)"
	return 1
}

case "${1:-status}" in
prepare) prepare ;;
up | start) up ;;
down | stop) down ;;
restart)
	down
	up
	;;
status) status ;;
renew-cert) renew_cert ;;
restore-cert) restore_cert ;;
*)
	echo "usage: $0 prepare|up|down|status|stop|start|restart|renew-cert|restore-cert" >&2
	exit 2
	;;
esac
