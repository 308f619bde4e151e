#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The e2e stack's Kafka: Apache Kafka 4 (KRaft, each node a combined broker
# and controller) bound to 127.0.0.1, run from the Maven Central jars that
# tests/e2e/pom.xml pins. One node by default; FORGE_STACK_KAFKA_NODES=3
# (scripts/test's choice) makes it a replicated cluster as sites run it
# (issue 38; tests/e2e/worker/test_kafka_nodes.py): nodes 1, 2 and 3
# (the controller quorum), every topic with replication factor 3 and
# min.insync.replicas=2, the offsets and transaction state topics likewise.
# Node N listens on 19092+10(N-1) (PLAINTEXT), +1 (CONTROLLER), +2
# (SASL_SSL); node 1's files are $FORGE_STACK_RUN/kafka/, node N's
# $FORGE_STACK_RUN/kafka/node-N/. A cluster made with another node count
# is replaced by a fresh one (its topics and offsets go) at the next `up`.
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
#   kafka.sh down     stop every node by pid (TERM, KILL after 30 s); the data
#                     directories and the caches stay
#   kafka.sh status   one line; exit 0 only when the cluster answers metadata
#   kafka.sh stop     every node: as down
#   kafka.sh start    as up (a running node is left alone)
#   kafka.sh restart  down, then up: the data directories stay, so topics,
#                     committed offsets and transactions survive it
#   kafka.sh stop N   node N alone (TERM: a clean shutdown, its leaderships
#                     moved first); start N brings it back and waits until
#                     it answers; fail N kills it (SIGKILL: a crash)
#   kafka.sh renew-cert  a new broker key and certificate (same CA, same
#                     names) in $FORGE_STACK_RUN/kafka/tls/, loaded by the
#                     running broker through its dynamic
#                     listener.name.sasl_ssl.ssl.keystore.location (no restart)
#   kafka.sh restore-cert  delete that dynamic setting: back to the cached
#                     certificate (reloaded the same way)
#
# Files: $FORGE_STACK_RUN/kafka/{kafka.pid,server.properties,cluster.id,nodes,data/,logs/}
# (logs/server.log is the broker's log, logs/tools.log the admin tools' log);
# users/<user>.password (0600, random, made once: the SCRAM passwords);
# $FORGE_CACHE_DIR/kafka/tls/{ca.pem,ca.key,broker.p12,keystore.pass} (made
# once; broker.p12 holds the broker's key and its certificate for
# DNS:localhost and IP:127.0.0.1).
#
# Environment: FORGE_STACK_PARTITIONS (default 6) partitions per topic of
# the worker's (forge.jobcomp has 3, whatever it says);
# FORGE_STACK_KAFKA_NODES (1 or 3; unset: the count the cluster was made
# with, at first one); FORGE_STACK_KAFKA_HEAP each
# node's -Xmx (default 512m, 384m with three nodes).
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
# The node count: FORGE_STACK_KAFKA_NODES, else the running cluster's
# (the count `up` made it with), else one.
nodes=${FORGE_STACK_KAFKA_NODES:-$(cat "$run/nodes" 2>/dev/null || echo 1)}
case "$nodes" in
1 | 3) ;;
*)
	echo "kafka.sh: FORGE_STACK_KAFKA_NODES must be 1 or 3, not '$nodes'" >&2
	exit 2
	;;
esac
# A replicated cluster as sites run one: every replica on another node, a
# write acknowledged by two (acks=all) before it counts.
replication=$nodes
min_isr=$((nodes > 1 ? 2 : 1))
tls=$cache/tls
users=$run/users
acl_file=$(cd "$e2e/../.." && pwd)/deploy/kafka/acls.tsv
# SCRAM user of each role of acls.tsv; outsider has no role: no ACL at all.
roles=(worker=forge-worker operator=forge-operator platform=platform slurm=slurm-jobcomp)
scram_users=(forge-worker forge-operator platform slurm-jobcomp outsider)
partitions=${FORGE_STACK_PARTITIONS:-6}
heap=${FORGE_STACK_KAFKA_HEAP:-$([ "$nodes" = 1 ] && echo 512m || echo 384m)}
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

# --- nodes --------------------------------------------------------------------

# Node $1's folder, and its PLAINTEXT, CONTROLLER and SASL_SSL ports.
node_dir() { if [ "$1" = 1 ]; then echo "$run"; else echo "$run/node-$1"; fi; }
node_port() { echo $((19092 + 10 * ($1 - 1))); }
node_cport() { echo $((19093 + 10 * ($1 - 1))); }
node_sport() { echo $((19094 + 10 * ($1 - 1))); }

# $1 names a node of this cluster, or the script stops.
check_node() {
	case "$1" in
	[1-3]) [ "$1" -le "$nodes" ] && return 0 ;;
	esac
	die "no node '$1': the cluster has $nodes (FORGE_STACK_KAFKA_NODES)"
}

# The nodes' addresses on one listener (node_port or node_sport), joined.
addresses() {
	local i out=
	for ((i = 1; i <= nodes; i++)); do out+="${out:+,}127.0.0.1:$($1 "$i")"; done
	echo "$out"
}
bootstrap=$(addresses node_port)
secured=$(addresses node_sport)
# Node 1's, for the messages and the env file's log path.
port=$(node_port 1)

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

# The pid of node $1's broker, if it runs (its pid file names a live
# kafka.Kafka).
broker_pid() {
	local pid pidfile
	pidfile=$(node_dir "$1")/kafka.pid
	stack_pid_alive "$pidfile" || return 1
	pid=$(cat "$pidfile")
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q ' kafka\.Kafka ' || return 1
	echo "$pid"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The tail of node $1's logs since its last start (start_broker marks it).
show_logs() {
	local f from dir
	dir=$(node_dir "$1")
	for f in "$dir/logs/server.log" "$dir/logs/kafka.out"; do
		[ -s "$f" ] || continue
		from=$(grep -n '^=== .* kafka\.sh up$' "$f" | tail -n1 | cut -d: -f1)
		echo "--- $f (last 40 lines since this start)" >&2
		tail -n "+${from:-1}" "$f" | tail -n 40 >&2
	done
}

# The controller quorum: every node's CONTROLLER listener.
voters() {
	local i out=
	for ((i = 1; i <= nodes; i++)); do out+="${out:+,}$i@127.0.0.1:$(node_cport "$i")"; done
	echo "$out"
}

# Node $1's server.properties.
write_config() {
	local i=$1 dir port cport sport
	dir=$(node_dir "$i")
	port=$(node_port "$i")
	cport=$(node_cport "$i")
	sport=$(node_sport "$i")
	mkdir -p "$dir/logs"
	# owner-only: it holds the keystore's password
	(umask 077 && : >"$dir/server.properties")
	cat >"$dir/server.properties" <<-EOF
		# written by tests/e2e/stack.d/kafka.sh up (node $i of $nodes)
		process.roles=broker,controller
		node.id=$i
		controller.quorum.voters=$(voters)
		# PLAINTEXT: the stack's internal/admin listener and the plaintext
		# smoke scenario's; SASL_SSL: every client of the secured stack.
		listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport,SASL_SSL://127.0.0.1:$sport
		advertised.listeners=PLAINTEXT://127.0.0.1:$port,SASL_SSL://127.0.0.1:$sport
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
		log.dirs=$dir/data
		num.partitions=$partitions
		# replicated as the node count allows: 3 and 2 in sync with three
		default.replication.factor=$replication
		min.insync.replicas=$min_isr
		offsets.topic.replication.factor=$replication
		offsets.topic.num.partitions=10
		transaction.state.log.replication.factor=$replication
		transaction.state.log.min.isr=$min_isr
		transaction.state.log.num.partitions=10
		share.coordinator.state.topic.replication.factor=$replication
		share.coordinator.state.topic.min.isr=$min_isr
		group.initial.rebalance.delay.ms=0
		num.network.threads=2
		num.io.threads=4
		num.recovery.threads.per.data.dir=1
		log.cleaner.threads=1
	EOF
}

# The cluster id every node is formatted with (made once; a cluster of
# another node count is replaced: fresh_cluster).
cluster_id() {
	local id=
	[ -s "$run/cluster.id" ] && id=$(cat "$run/cluster.id")
	if [ -z "$id" ]; then
		# A Kafka Uuid: 16 random bytes, URL-safe base64 without padding.
		id=-
		while [ "${id:0:1}" = - ]; do
			id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22)
		done
		echo "$id" >"$run/cluster.id"
	fi
	cat "$run/cluster.id"
}

# A cluster made with another node count (none written: one) goes: every
# node stopped, every data directory and the cluster id removed.
fresh_cluster() {
	local had i
	had=$(cat "$run/nodes" 2>/dev/null || echo 1)
	[ "$had" != "$nodes" ] || return 0
	if [ -e "$run/data" ] || [ -e "$run/node-2/data" ]; then
		stack_log "kafka: the cluster had $had node(s), $nodes wanted: a fresh one (its topics and offsets go)"
	fi
	for i in 1 2 3; do stop_node "$i"; done
	for i in 1 2 3; do rm -rf "$(node_dir "$i")/data"; done
	rm -f "$run/cluster.id"
	echo "$nodes" >"$run/nodes"
}

# Reuse node $1's data directory when it was formatted with the cluster's
# id; otherwise wipe and format it.
ensure_storage() {
	local i=$1 id dir
	id=$(cluster_id)
	dir=$(node_dir "$i")
	if grep -qx "cluster.id=$id" "$dir/data/meta.properties" 2>/dev/null; then
		return 0
	fi
	stack_log "kafka: formatting node $i's $dir/data (cluster id $id)"
	rm -rf "$dir/data"
	kafka_java kafka.tools.StorageTool format -t "$id" -c "$dir/server.properties" >"$dir/logs/format.log" 2>&1 || {
		cat "$dir/logs/format.log" >&2
		die "formatting $dir/data failed"
	}
}

start_broker() {
	local i=$1 dir mark
	dir=$(node_dir "$i")
	stack_log "kafka: starting Kafka $kafka_version node $i on 127.0.0.1:$(node_port "$i") (log: $dir/logs/server.log)"
	mark="=== $(date -u +%FT%TZ) kafka.sh up"
	echo "$mark" >>"$dir/logs/kafka.out"
	echo "$mark" >>"$dir/logs/server.log"
	# In its own session, cwd its folder, with none of our descriptors; $!
	# is the JVM's pid (the subshell execs setsid, which execs java: a
	# background child of a script leads no process group).
	(
		cd "$dir"
		stack_close_fds
		exec setsid nohup java "-Xmx$heap" -Xms128m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
			-Djava.awt.headless=true \
			-Dlog4j2.configurationFile="$e2e/kafka/log4j2.yaml" \
			-Dforge.kafka.log="$dir/logs/server.log" \
			-Dkafka.logs.dir="$dir/logs" \
			-cp "$libs/*" kafka.Kafka "$dir/server.properties" \
			>>"$dir/logs/kafka.out" 2>&1 </dev/null
	) &
	echo $! >"$dir/kafka.pid"
}

# Node $1 started unless it runs; its pid.
launch_node() {
	local i=$1 pid p
	if pid=$(broker_pid "$i"); then
		echo "$pid"
		return 0
	fi
	rm -f "$(node_dir "$i")/kafka.pid"
	for p in "$(node_port "$i")" "$(node_cport "$i")" "$(node_sport "$i")"; do
		port_in_use "$p" && die "127.0.0.1:$p is in use by a process that is not our node $i"
	done
	write_config "$i"
	ensure_storage "$i"
	start_broker "$i" >&2
	cat "$(node_dir "$i")/kafka.pid"
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
		export FORGE_STACK_KAFKA_NODES=$nodes
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
	fresh_cluster
	local pids=() i admin_pid out rc line u opts=() dead
	for u in "${scram_users[@]}"; do opts+=(--scram "$u=$users/$u.password"); done
	opts+=(--acls "$acl_file")
	for u in "${roles[@]}"; do opts+=(--role "$u"); done
	opts+=(--set "FORGE_KAFKA_TOPIC_REQUESTS=$topic_requests" --set "FORGE_KAFKA_TOPIC_STATE=$topic_state"
		--set "FORGE_KAFKA_TOPIC_STATUS=$topic_status" --set "FORGE_KAFKA_TOPIC_LOGS=$topic_logs"
		--set "FORGE_KAFKA_TOPIC_DLQ=$topic_dlq" --set "FORGE_KAFKA_JOBCOMP_TOPIC=$topic_jobcomp"
		--set "FORGE_KAFKA_GROUP_ID=forge-worker")
	for ((i = 1; i <= nodes; i++)); do
		pids[i]=$(launch_node "$i") || die "node $i did not start"
	done

	# One JVM waits for metadata and creates the topics (retried until
	# every node has registered: their replication factor is the node
	# count); stop waiting early when a node dies.
	out=$run/logs/admin.out
	stack_admin ensure "$ready_timeout" "$partitions" "${opts[@]}" "${topic_specs[@]}" >"$out" 2>&1 9>&- &
	admin_pid=$!
	while kill -0 "$admin_pid" 2>/dev/null; do
		dead=
		for ((i = 1; i <= nodes; i++)); do kill -0 "${pids[i]}" 2>/dev/null || dead=$i; done
		if [ -n "$dead" ]; then
			kill "$admin_pid" 2>/dev/null || true
			wait "$admin_pid" || true
			show_logs "$dead"
			die "node $dead (pid ${pids[dead]}) exited during startup"
		fi
		sleep 0.2
	done
	rc=0
	wait "$admin_pid" || rc=$?
	if [ "$rc" -eq 3 ]; then
		cat "$out" >&2
		die "topic, user or ACL setup failed on $bootstrap (a changed FORGE_STACK_PARTITIONS needs fresh data directories: kafka.sh down; rm -rf $run/data $run/node-*/data; kafka.sh up)"
	elif [ "$rc" -ne 0 ]; then
		cat "$out" >&2
		show_logs 1
		die "the cluster on $bootstrap (pids ${pids[*]}) did not answer metadata within ${ready_timeout}s"
	fi
	while read -r line; do stack_log "kafka: $line"; done <"$out"
	write_env
	stack_log "kafka: up on $bootstrap and $secured (SASL_SSL), $nodes node(s) (pids ${pids[*]})"
}

# Node $1 alone, started unless it runs, and waited for until it answers
# metadata on its own listener.
start_node() {
	local i=$1 pid
	check_node "$i"
	mkdir -p "$run/logs"
	exec 9>"$run/.lock"
	flock 9
	pid=$(launch_node "$i") || die "node $i did not start"
	kafka_java StackAdmin "127.0.0.1:$(node_port "$i")" ready "$ready_timeout" >/dev/null 2>&1 9>&- || {
		show_logs "$i"
		die "node $i (pid $pid) did not answer metadata within ${ready_timeout}s"
	}
	stack_log "kafka: node $i up on 127.0.0.1:$(node_port "$i") (pid $pid)"
}

# Node $1 stopped: TERM (a clean shutdown: its leaderships move first),
# KILL after 30 s.
stop_node() {
	local i=$1 pid n
	if ! pid=$(broker_pid "$i"); then
		rm -f "$(node_dir "$i")/kafka.pid"
		return 0
	fi
	stack_log "kafka: stopping node $i (pid $pid)"
	kill -TERM "$pid" 2>/dev/null || true
	for ((n = 0; n < 300; n++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		stack_log "kafka: node $i (pid $pid) still alive after 30 s; KILL"
		kill -KILL "$pid" 2>/dev/null || true
		while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	fi
	rm -f "$(node_dir "$i")/kafka.pid"
}

# Node $1 crashes: SIGKILL, nothing flushed, nothing handed over.
fail_node() {
	local i=$1 pid
	check_node "$i"
	pid=$(broker_pid "$i") || {
		stack_log "kafka: node $i is not running"
		return 0
	}
	stack_log "kafka: failing node $i: KILL $pid"
	kill -KILL "$pid" 2>/dev/null || true
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	rm -f "$(node_dir "$i")/kafka.pid"
}

# A renewed broker certificate (new key, same CA and names), loaded live.
renew_cert() {
	local out
	broker_pid 1 >/dev/null || die "node 1 does not run"
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

# Every node stopped at once: one after the other, the last ones would
# wait for a controller quorum that left with the first (their controlled
# shutdown then lasts until stop_node's KILL).
down() {
	local i pids=()
	for ((i = 1; i <= 3; i++)); do
		broker_pid "$i" >/dev/null || continue
		stop_node "$i" &
		pids+=($!)
	done
	[ ${#pids[@]} -gt 0 ] || stack_log "kafka: not running"
	for i in "${pids[@]}"; do wait "$i"; done
}

status() {
	local pid out id n i pids=()
	for ((i = 1; i <= nodes; i++)); do
		pid=$(broker_pid "$i") || pid=none
		pids+=("$pid")
	done
	if [ -d "$tools" ] && out=$(stack_admin ready 5 2>/dev/null); then
		read -r _ id n <<<"$out"
		echo "kafka: up on $bootstrap (pids ${pids[*]}, cluster $id, $n of $nodes broker(s) registered)"
		[ "$n" = "$nodes" ]
		return
	fi
	echo "kafka: down (pids ${pids[*]}; $bootstrap does not answer metadata)"
	return 1
}

usage() {
	echo "usage: $0 prepare|up|down|status|stop|start|restart|renew-cert|restore-cert" >&2
	echo "       $0 stop|start|fail N   (node N of FORGE_STACK_KAFKA_NODES)" >&2
	exit 2
}

case "${1:-status}" in
prepare) prepare ;;
up | start)
	if [ $# -eq 2 ]; then start_node "$2"; else up; fi
	;;
down | stop)
	if [ $# -eq 2 ]; then
		check_node "$2"
		stop_node "$2"
	else
		down
	fi
	;;
fail)
	[ $# -eq 2 ] || usage
	fail_node "$2"
	;;
restart)
	down
	up
	;;
status) status ;;
renew-cert) renew_cert ;;
restore-cert) restore_cert ;;
*) usage ;;
esac
