# SPDX-License-Identifier: Apache-2.0
"""
harness.py - what the end-to-end scenarios need to drive real forge-worker
processes through Kafka only, against the real stack (tests/e2e/stack up):

  Stack         the stack's env file, read once; slurmrestd through the
                stack's TLS front (its CA: ssl_context(), connection()),
                or plain for the fault-injection proxies (plain_slurm_url);
                kafka_conf(role) the confluent_kafka settings of a principal (admin, worker,
                operator, platform, slurm, outsider), grant()/revoke() the ACLs of
                deploy/kafka/acls.tsv for a scenario's topics and group (and
                the stack's forge.jobcomp, every scenario's: SHARED_ACL_VARS)
  acl_lines     deploy/kafka/acls.tsv's lines (one role's, or all)
  command_env   the environment of one `forge-worker <command>` an operator
                runs (the stack's settings, a scenario's topics and group)
  own_storage   a storage root of a scenario's own under the stack's
  one_worker    a scenario module's topics, one ready worker and its
                readers, stopped (SIGTERM, exit 0) at the end
  Topics        a fresh set of the five topics per scenario (unique names, so
                scenarios never see each other's messages or state)
  Worker        one `forge-worker run` process: start, SIGTERM, kill -9, its
                JSON log (ownership intervals are read from it)
  StatusReader  a read_committed (or read_uncommitted) reader of the status
                topic, collecting events by launch_id on its own thread
  SlurmWatch    a thread that lists slurmctld's jobs every 0.3 s through
                slurmrestd and remembers every job it ever saw, by comment tag
                (forge:<launch_id>:<attempt>, and :<try> after it for a
                retry's later tries: one attempt's tries together), so
                duplicates are counted even after a job ended

The requests are built here too (launch(), het_launch(), cancel()), in the
contract's bare JSON form; the image they name, images/e2e.sif, is the
stack's python image (a real SIF under its runtime root: every command
runs inside it, through the cluster's apptainer;
tests/e2e/stack.d/images.sh).
"""

import contextlib
import http.client
import json
import os
import shlex
import signal
import socket
import ssl
import subprocess
import tarfile
import threading
import time
import urllib.parse
import urllib.error
import urllib.request
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclBindingFilter,
                                   AclOperation, AclPermissionType,
                                   AdminClient, NewTopic, ResourcePatternType,
                                   ResourceType)

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
STACK = os.path.join(TOP, "tests", "e2e", "stack")
PARTITIONS = 6
ACLS = os.path.join(TOP, "deploy", "kafka", "acls.tsv")
TERMINAL = {"SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT", "LOST", "REJECTED"}


def wait_until(what, predicate, timeout, step=0.2):
    """Polls predicate until it returns a true value; fails naming what
    (a callable: what it says at the deadline)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout} s waiting for {said}")
        time.sleep(step)


# The images of the stack's runtime root (tests/e2e/stack.d/images.sh):
# e2e.sif, the one launch() names, and demo.sif, the samples', are its
# python image; shell.sif holds busybox alone.
IMAGES = ("e2e.sif", "demo.sif", "python.sif", "shell.sif")

# The daemons of the stack that only some scenarios use, by the resource
# they make up (conftest.py: @pytest.mark.uses): the `faults` partition's
# nodes (tests/e2e/slurm/slurm.conf.in), which the node-fault scenarios
# kill while others run beside them. Every other daemon is shared.
OWN_DAEMONS = {"slurmd-h200-f": "fault-nodes", "slurmd-a100-f": "fault-nodes"}
# A worker's environment that submits to the `faults` partition.
FAULT_NODES_ENV = {"FORGE_SLURM_PARTITION": "faults"}
# What the running scenario may stop, kill or deny: its
# @pytest.mark.disrupts (conftest.py fills it for each scenario).
ALLOWED_FAULTS = set()


def check_disrupts(what, verb="disrupts"):
    """Fails loudly, before any harm, when the running scenario would stop,
    kill or deny `what` without saying so, or while others run beside it
    (scripts/e2e sets FORGE_E2E_SIDE_BY_SIDE for those) on something they
    share."""
    if what not in ALLOWED_FAULTS:
        raise AssertionError(
            f"this scenario {verb} {what} but is not marked "
            f"@pytest.mark.disrupts({what!r}) (docs/DEVELOPING.md, "
            f"\"Adding a scenario\")")
    if what not in OWN_DAEMONS and os.environ.get("FORGE_E2E_SIDE_BY_SIDE") == "1":
        raise AssertionError(
            f"this scenario {verb} {what}, which the scenarios beside it "
            f"share, in a side-by-side group: scripts/e2e runs the "
            f"scenarios that disrupt shared things alone")


def stack_verb(verb, daemon):
    """tests/e2e/stack VERB DAEMON (stop, start, restart, fail); it returns
    once the daemon is ready (start) or gone (stop, fail). Only from a
    scenario marked @pytest.mark.disrupts(DAEMON) (check_disrupts)."""
    check_disrupts(daemon, verb)
    r = subprocess.run(["bash", STACK, verb, daemon], capture_output=True,
                       text=True, timeout=300)
    print(r.stderr[-2000:], end="")  # the stack's log lines, on failure
    assert r.returncode == 0, f"stack {verb} {daemon}: {r.stderr[-2000:]}"


class AclLine:
    """One line of deploy/kafka/acls.tsv: role, commands, resource,
    pattern, name (${FORGE_*} in it: the deployment's value), operation,
    why."""

    RESOURCES = {"topic": ResourceType.TOPIC, "group": ResourceType.GROUP,
                 "transactional-id": ResourceType.TRANSACTIONAL_ID,
                 "cluster": ResourceType.BROKER}

    def __init__(self, lineno, fields):
        (self.role, commands, self.resource, self.pattern, self.name,
         self.operation, self.why) = fields[:7]
        self.commands = commands.split(",")
        self.lineno = lineno

    def __repr__(self):
        return (f"acls.tsv:{self.lineno} {self.role} {self.resource} "
                f"{self.pattern} {self.name} {self.operation}")

    def resolve(self, values):
        """The name with each ${VAR} replaced; None when a VAR has no value."""
        name = self.name
        while "${" in name:
            start = name.index("${")
            end = name.index("}", start)
            value = values.get(name[start + 2:end])
            if value is None:
                return None
            name = name[:start] + value + name[end + 1:]
        return name

    def binding(self, user, name):
        return AclBinding(self.RESOURCES[self.resource], name,
                          ResourcePatternType[self.pattern], f"User:{user}",
                          "*", AclOperation[self.operation],
                          AclPermissionType.ALLOW)


def acl_lines(role=None):
    """deploy/kafka/acls.tsv's lines in order (one role's, or all)."""
    out, header = [], True
    with open(ACLS) as f:
        for n, raw in enumerate(f, 1):
            raw = raw.rstrip("\n")
            if not raw.strip() or raw.startswith("#"):
                continue
            if header:
                header = False
                continue
            line = AclLine(n, raw.split("\t"))
            if role is None or line.role == role:
                out.append(line)
    return out


# The ${VAR}s of acls.tsv that name one topic of the stack's for every
# scenario: Slurm's jobcomp/kafka writes the records of every job to
# forge.jobcomp, whichever scenario's worker submitted it.
SHARED_ACL_VARS = ("FORGE_KAFKA_JOBCOMP_TOPIC",)
# The ${VAR}s of acls.tsv that name a scenario's own topics or group: a line
# naming none of them is every worker's (check_disrupts "kafka-acls").
SCENARIO_ACL_VARS = ("${FORGE_KAFKA_TOPIC_", "${FORGE_KAFKA_GROUP_ID}")


def acl_values(topics=None, group=None):
    """The ${VAR} values of a scenario: its topics' names (a Topics, or
    a dict of FORGE_KAFKA_TOPIC_* as an env has them, FORGE_KAFKA_JOBCOMP_TOPIC
    too), its group. The stack's shared topics are Stack.bindings'."""
    if isinstance(topics, dict):
        values = {k: v for k, v in topics.items()
                  if k.startswith("FORGE_KAFKA_TOPIC_") or k in SHARED_ACL_VARS}
    else:
        values = dict(topics.env()) if topics else {}
    if group:
        values["FORGE_KAFKA_GROUP_ID"] = group
    return values


class Stack:
    def __init__(self):
        path = os.environ.get("FORGE_STACK_ENV", "/var/tmp/forge-stack/stack.env")
        if not os.path.exists(path):
            raise RuntimeError(f"{path} is missing: run tests/e2e/stack up first")
        self.env = {}
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                if line.startswith("export "):
                    line = line[len("export "):]
                key, _, value = line.partition("=")
                # written by printf %q: quoted or backslash-escaped
                words = shlex.split(value)
                self.env[key] = words[0] if words else ""
        self.brokers = self.env["FORGE_KAFKA_BROKERS"]
        # the stack's internal/admin listener (PLAINTEXT, a super user)
        self.admin_brokers = self.env.get("FORGE_STACK_KAFKA_PLAINTEXT",
                                          self.brokers)
        self.secured = "FORGE_STACK_KAFKA_SASL_SSL" in self.env
        self._granted = set()
        self._admin = None
        self.api = self.env.get("FORGE_SLURM_REST_API_VERSION", "v0.0.43")
        self.runtime_root = self.env.get(
            "FORGE_RUNTIME_ROOT",
            os.path.join(self.env["FORGE_STORAGE_ROOT"], "runtimes"))
        # the images tests/e2e/stack up installs (stack.d/images.sh)
        self.image_dir = os.path.join(self.runtime_root, "images")
        for name in IMAGES:
            path = os.path.join(self.image_dir, name)
            assert os.path.getsize(path) > 0, f"{path}: tests/e2e/stack up installs it"
        # the URL the workers are given (the TLS front), and slurmrestd's
        # own plain one behind it, for the proxies that inject faults
        self.slurm_url = self.env["FORGE_SLURM_REST_URL"]
        self.plain_slurm_url = self.env.get("FORGE_STACK_SLURM_PLAIN_URL",
                                            self.slurm_url)

    def ssl_context(self):
        """What verifies the front as the worker does (the stack's CA,
        the name checked); None for a plain http:// URL."""
        if not self.slurm_url.startswith("https:"):
            return None
        return ssl.create_default_context(
            cafile=self.env.get("FORGE_SLURM_TLS_CA_FILE"))

    def connection(self, timeout=60):
        """A new keep-alive connection to FORGE_SLURM_REST_URL."""
        url = urllib.parse.urlsplit(self.slurm_url)
        if url.scheme == "https":
            return http.client.HTTPSConnection(url.hostname, url.port or 443,
                                               timeout=timeout,
                                               context=self.ssl_context())
        return http.client.HTTPConnection(url.hostname, url.port or 80,
                                          timeout=timeout)

    # ---- Kafka principals (issue 27) ----------------------------------------
    # admin: the PLAINTEXT listener, whose principal (ANONYMOUS) is a super
    # user: topic and ACL set-up, never a scenario's own traffic (so every
    # SASL principal stays least-privilege and no super user is reachable
    # with a password). worker, operator, platform, outsider: SASL_SSL with
    # SCRAM-SHA-512 as the stack's user of that role. A stack env file
    # without the secured listener (an older tree's): every role is plain.

    def kafka_conf(self, role):
        """The confluent_kafka settings of one principal."""
        if role == "admin" or not self.secured:
            return {"bootstrap.servers": self.admin_brokers if role == "admin"
                    else self.brokers}
        key = f"FORGE_STACK_KAFKA_{role.upper()}"
        with open(self.env[f"{key}_PASSWORD_FILE"]) as f:
            password = f.read().strip()
        return {"bootstrap.servers": self.env["FORGE_STACK_KAFKA_SASL_SSL"],
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": self.env[f"{key}_USER"],
                "sasl.password": password,
                "ssl.ca.location": self.env["FORGE_STACK_KAFKA_CA_FILE"]}

    def principal_env(self, role):
        """The worker's variables that make it run as the principal of a
        role (an operator command as forge-operator): {} on a plain stack."""
        if not self.secured:
            return {}
        key = f"FORGE_STACK_KAFKA_{role.upper()}"
        return {"FORGE_KAFKA_SASL_USERNAME": self.env[f"{key}_USER"],
                "FORGE_KAFKA_SASL_PASSWORD_FILE": self.env[f"{key}_PASSWORD_FILE"]}

    def user(self, role):
        return self.env.get(f"FORGE_STACK_KAFKA_{role.upper()}_USER", role)

    def admin(self):
        if self._admin is None:
            self._admin = AdminClient(self.kafka_conf("admin"))
        return self._admin

    def bindings(self, lines, topics=None, group=None):
        """AclBindings of acls.tsv lines for a scenario's topics and group;
        a line naming a value not given is left out. A line of a shared
        topic (SHARED_ACL_VARS: the stack's forge.jobcomp) is every
        scenario's, as the restore reader's group id is: granting it again
        is a no-op; revoking it (test_kafka_acls, for one start) takes it
        from every worker until it is granted back."""
        values = {k: self.env[k] for k in SHARED_ACL_VARS if self.env.get(k)}
        values.update(acl_values(topics, group))
        out = []
        for line in lines:
            name = line.resolve(values)
            if name is not None:
                out.append(line.binding(self.user(line.role), name))
        return out

    def grant(self, topics=None, group=None, lines=None):
        """Creates the ACLs of acls.tsv (every role's, or the lines given)
        for these topics and group, as a deployment would for its own
        names; once per (topics, group) unless lines are given."""
        if not self.secured:
            return
        key = tuple(sorted(acl_values(topics, group).items()))
        if lines is None and key in self._granted:
            return
        todo = self.bindings(acl_lines() if lines is None else lines,
                             topics, group)
        if todo:
            for f in self.admin().create_acls(todo).values():
                f.result(30)
            self._wait_acls_visible(todo)
        if lines is None:
            self._granted.add(key)

    def _wait_acls_visible(self, bindings, timeout=30):
        """Until the broker shows every binding: the controller commits an
        ACL before the broker's authorizer has it, and a worker that starts
        in between is denied and exits 78 (seen under load, with several
        scenarios starting at once)."""
        filters = [AclBindingFilter(b.restype, b.name, b.resource_pattern_type,
                                    b.principal, b.host, b.operation,
                                    b.permission_type) for b in bindings]

        def visible():
            return all(self.admin().describe_acls(f).result(30)
                       for f in filters)
        wait_until("the granted ACLs to reach the broker", visible, timeout,
                   step=0.1)

    def revoke(self, lines, topics=None, group=None):
        """Deletes exactly the ACLs of these acls.tsv lines (a line: one
        ACL) for these topics and group; grant(topics, group, lines) puts
        them back."""
        for line in lines:
            if not any(v in line.name for v in SCENARIO_ACL_VARS):
                check_disrupts("kafka-acls", f"revokes {line} (every worker's)")
        filters = [AclBindingFilter(b.restype, b.name, b.resource_pattern_type,
                                    b.principal, b.host, b.operation,
                                    b.permission_type)
                   for b in self.bindings(lines, topics, group)]
        if filters:
            for f in self.admin().delete_acls(filters).values():
                f.result(30)

    def slurm_get(self, path, method="GET", plugin="slurm"):
        with open(self.env["FORGE_SLURM_JWT_FILE"]) as f:
            token = f.read().strip()
            if token.startswith("SLURM_JWT="):
                token = token[len("SLURM_JWT="):]
        req = urllib.request.Request(
            f"{self.env['FORGE_SLURM_REST_URL']}/{plugin}/{self.api}/{path}",
            method=method,
            headers={"X-SLURM-USER-NAME": self.env["FORGE_SLURM_REST_USER"],
                     "X-SLURM-USER-TOKEN": token})
        with urllib.request.urlopen(req, timeout=10,
                                    context=self.ssl_context()) as r:
            return json.load(r)

    def accounting(self, job_id):
        """slurmdbd's records of a job (each het component, each run of a
        requeued one) through slurmrestd's /slurmdb/: [] when it has none."""
        try:
            return self.slurm_get(f"job/{job_id}", plugin="slurmdb").get("jobs") or []
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return []
            raise

    def slurmctld_knows(self, job_id):
        """Whether slurmctld still has the job (MinJobAge not passed)."""
        try:
            return bool(self.slurm_get(f"job/{job_id}").get("jobs"))
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return False
            raise


def own_storage(stack, tag):
    """A storage root of this scenario's own under the stack's: reconcile
    takes for its deployment's only the tagged jobs that run in its
    staging folder, so other scenarios' jobs on the shared Slurm are left
    alone (docs/RECOVERY.md)."""
    root = stack.env["FORGE_STORAGE_ROOT"]
    host = os.path.join(root, tag)
    images = os.path.join(host, "runtimes", "images")
    os.makedirs(images, exist_ok=True)
    for name in IMAGES:  # the stack's own, linked
        with contextlib.suppress(FileExistsError):
            os.link(os.path.join(stack.image_dir, name),
                    os.path.join(images, name))
    owner = os.stat(root)  # the job user's, as the stack makes its own
    for path in (host, os.path.join(host, "runtimes")):
        os.chown(path, owner.st_uid, owner.st_gid)
        os.chmod(path, 0o755)
    return {"FORGE_STORAGE_ROOT": host,
            "FORGE_SLURM_STORAGE_ROOT":
                f"{stack.env['FORGE_SLURM_STORAGE_ROOT']}/{tag}",
            "FORGE_RUNTIME_ROOT": os.path.join(host, "runtimes")}


def command_env(stack, topics=None, group=None, extra=None, role="operator"):
    """The environment of one `forge-worker <command>` run by an operator:
    the stack's settings as the principal of the role (the operator
    commands run as forge-operator, docs/KAFKA_ACLS.md; "worker": the env
    file as written), the scenario's topics and group (their ACLs granted),
    nothing of ours (FORGE_*) from the caller's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORGE_")}
    env.update(stack.env)
    env.update(stack.principal_env(role))
    env.update(topics.env() if topics else {})
    if group:
        env["FORGE_KAFKA_GROUP_ID"] = group
    if topics or group:
        stack.grant(topics, group)
    env.update(extra or {})
    return env


# Every scenario's Topics, for conftest.py to delete once its module is
# over: a broker holding fewer partitions restarts faster (the chaos
# scenarios restart it, and an outage longer than slurmctld's MinJobAge is
# the known limit that resubmits an ended job).
CREATED_TOPICS = []
E2E_PREFIX = "e2e."


def delete_topic_names(stack, names, wait_s=60):
    """Deletes topics by name as the stack's admin; errors (already gone)
    are of no interest to a scenario."""
    if not names:
        return
    admin = stack.admin()
    for future in admin.delete_topics(list(names),
                                      operation_timeout=30).values():
        try:
            future.result(wait_s)
        except Exception:  # noqa: BLE001 - gone already, or the next run's
            pass


def delete_leftover_topics(stack):
    """Every scenario topic (E2E_PREFIX) an earlier run left behind: only
    while no scenario runs (a session of its own, or scripts/e2e before its
    groups start)."""
    left = [t for t in stack.admin().list_topics(timeout=30).topics
            if t.startswith(E2E_PREFIX)]
    delete_topic_names(stack, left, wait_s=120)


class Topics:
    """requests and state co-partitioned (state compacted), like the stack's.
    Named <prefix><tag>.<random>: a scenario's under E2E_PREFIX, which a
    scenario session deletes whatever run left them (conftest.py); a
    benchmark that runs beside such sessions gives a prefix of its own."""

    def __init__(self, stack, tag, requests_config=None, dlq_config=None,
                 prefix=E2E_PREFIX):
        self.stack = stack
        CREATED_TOPICS.append(self)
        base = f"{prefix}{tag}.{uuid.uuid4().hex[:8]}"
        self.requests = f"{base}.requests"
        self.state = f"{base}.state"
        self.status = f"{base}.status"
        self.logs = f"{base}.logs"
        self.dlq = f"{base}.dlq"
        admin = stack.admin()
        compacted = {"cleanup.policy": "compact", "max.message.bytes": "4194304"}
        new = [NewTopic(self.requests, PARTITIONS, 1, config=requests_config or {}),
               NewTopic(self.state, PARTITIONS, 1, config=compacted),
               NewTopic(self.status, 3, 1), NewTopic(self.logs, 3, 1),
               NewTopic(self.dlq, 1, 1, config=dlq_config or {})]
        for future in admin.create_topics(new).values():
            future.result(30)
        stack.grant(self)  # every role's topic lines, for these names
        self.producer = Producer({**stack.kafka_conf("platform"),
                                  "partitioner": "murmur2_random"})

    def names(self):
        return [self.requests, self.state, self.status, self.logs, self.dlq]

    def env(self):
        return {"FORGE_KAFKA_TOPIC_REQUESTS": self.requests,
                "FORGE_KAFKA_TOPIC_STATE": self.state,
                "FORGE_KAFKA_TOPIC_STATUS": self.status,
                "FORGE_KAFKA_TOPIC_LOGS": self.logs,
                "FORGE_KAFKA_TOPIC_DLQ": self.dlq}

    def send(self, key, value):
        """One request (dict, or raw bytes), keyed as the platform keys it."""
        if isinstance(value, dict):
            value = json.dumps(value).encode()
        self.producer.produce(self.requests, key=key, value=value)
        self.producer.flush(10)

    def reader_conf(self, topic):
        """A hand-assigned reader of one of these topics as the principal
        that may read it: the platform (status, logs, dlq), or the operator
        (requests, state) with the operator commands' scan group id."""
        if topic in (self.status, self.logs, self.dlq):
            return {**self.stack.kafka_conf("platform"),
                    "group.id": f"platform-e2e-read-{uuid.uuid4().hex[:8]}"}
        return {**self.stack.kafka_conf("operator"),
                "group.id": "forge-worker-recovery-scan"}

    def read_all(self, topic, timeout=5.0):
        """Every committed message of a topic so far: (key, value, headers)."""
        c = Consumer({**self.reader_conf(topic),
                      "isolation.level": "read_committed",
                      "enable.auto.commit": False})
        meta = c.list_topics(topic, timeout=10).topics[topic]
        c.assign([TopicPartition(topic, p, 0) for p in meta.partitions])
        out, idle_until = [], time.monotonic() + timeout
        while time.monotonic() < idle_until:
            m = c.poll(0.2)
            if m is None or m.error():
                continue
            out.append((m.key(), m.value(), dict(m.headers() or [])))
            idle_until = time.monotonic() + 1.0
        c.close()
        return out


# When any StatusReader last received an event (monotonic): SlurmWatch
# answers from a sample asked after it.
LAST_EVENT = [0.0]


class StatusReader:
    """Collects status events by launch_id, on its own thread."""

    def __init__(self, stack, topic, isolation="read_committed", conf=None):
        self.events = {}
        self.lock = threading.Lock()
        self.stopping = False
        self.consumer = Consumer({**stack.kafka_conf("platform"),
                                  "group.id": f"platform-e2e-status-{uuid.uuid4().hex[:8]}",
                                  "isolation.level": isolation,
                                  "enable.auto.commit": False,
                                  **(conf or {})})
        # A topic just created may not be in the metadata yet (a busy
        # broker): assigning its partitions then would assign none.
        meta = wait_until(f"{topic}'s partitions in the metadata",
                          lambda: self._partitions(topic), 60, step=0.5)
        self.consumer.assign([TopicPartition(topic, p, 0) for p in meta])
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _partitions(self, topic):
        t = self.consumer.list_topics(topic, timeout=10).topics.get(topic)
        return sorted(t.partitions) if t and not t.error and t.partitions else None

    def _run(self):
        while not self.stopping:
            m = self.consumer.poll(0.1)
            if m is None or m.error():
                continue
            event = json.loads(m.value())
            event["_headers"] = dict(m.headers() or [])
            event["_received"] = time.time()
            LAST_EVENT[0] = time.monotonic()
            with self.lock:
                self.events.setdefault(m.key().decode(), []).append(event)

    def of(self, launch_id):
        with self.lock:
            return list(self.events.get(launch_id, []))

    def states(self, launch_id):
        return [e["data"]["state"] for e in self.of(launch_id)]

    def all(self):
        with self.lock:
            return {k: list(v) for k, v in self.events.items()}

    def wait_state(self, launch_id, state, timeout=120):
        return wait_until(f"{launch_id} to reach {state} (so far: "
                          f"{self.states(launch_id)})",
                          lambda: next((e for e in self.of(launch_id)
                                        if e["data"]["state"] == state), None),
                          timeout)

    def wait_terminal(self, launch_id, timeout=180):
        return wait_until(f"{launch_id} to end (so far: {self.states(launch_id)})",
                          lambda: next((e for e in self.of(launch_id)
                                        if e["data"]["state"] in TERMINAL), None),
                          timeout)

    def close(self):
        self.stopping = True
        self.thread.join(5)
        self.consumer.close()


# A job's states once a run of it is over.
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
         "OUT_OF_MEMORY", "BOOT_FAIL", "PREEMPTED", "DEADLINE"}

# Job states only a job that started reaches (a held job cancelled goes
# PENDING -> CANCELLED).
RAN = {"RUNNING", "COMPLETING", "COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL",
       "OUT_OF_MEMORY", "SUSPENDED"}


def held(job):
    """A pending job on hold (priority 0): the worker submits every job so
    and releases its own at once; one nobody released cannot start."""
    prio = job.get("priority")
    if isinstance(prio, dict):  # {"set", "infinite", "number"}
        prio = prio.get("number") if prio.get("set") else None
    return ("PENDING" in job.get("job_state", []) and
            (prio == 0 or (job.get("state_reason") or "").startswith("JobHeld")))


def attempt_tag(comment):
    """forge:<launch_id>:<attempt> of a job's tag, and its try (1 when the
    tag names none: forge:<launch_id>:<attempt>:<try> for a retry's later
    tries, issue 26)."""
    parts = comment.split(":")
    if len(parts) == 4 and parts[3].isdigit():
        return ":".join(parts[:3]), int(parts[3])
    return comment, 1


class SlurmWatch:
    """Every Slurm job seen while it runs, by comment tag. A held pending
    job is not alive (it cannot start until released): most_alive counts
    the jobs that could run, an attempt's tries together."""

    def __init__(self, stack):
        self.stack = stack
        self.jobs = {}  # job_id -> {"comment", "het_job_id", "states": [..]}
        self.lock = threading.Lock()
        self.stopping = False
        self.max_live = {}  # comment -> most leaders alive at once
        self.sampled_from = 0.0  # when the last whole sample was asked
        self.sampled = threading.Condition(self.lock)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping:
            asked = time.monotonic()
            try:
                self._sample(self.stack.slurm_get("jobs")["jobs"])
                with self.sampled:
                    self.sampled_from = asked
                    self.sampled.notify_all()
            except Exception:  # slurmrestd busy: the next sample will do
                pass
            time.sleep(0.3)

    def _fresh(self, timeout=10):
        """With the lock held: waits for a sample asked after the last
        event any StatusReader received (LAST_EVENT). A job that ended a
        moment before its launch's event (a pushed end reaches the platform
        well within a second, maybe before any sample saw the job) has been
        seen by then: slurmctld keeps it MinJobAge after its end. Once the
        events are quiet (the verdict loops after a run) that sample is
        already there: no wait."""
        since = LAST_EVENT[0]
        self.sampled.wait_for(lambda: self.sampled_from > since, timeout)

    def _sample(self, jobs):
        live = {}
        with self.lock:
            for j in jobs:
                comment = j.get("comment") or ""
                if not comment.startswith("forge:"):
                    continue
                jid = j["job_id"]
                het = (j.get("het_job_id") or {}).get("number", 0) or 0
                leader = het or jid
                state = j["job_state"]
                comment, try_num = attempt_tag(comment)
                rec = self.jobs.setdefault(jid, {"comment": comment,
                                                 "try": try_num,
                                                 "leader": leader, "states": [],
                                                 "nodes": ""})
                if j.get("nodes"):
                    rec["nodes"] = j["nodes"]
                if not rec["states"] or rec["states"][-1] != state:
                    rec["states"].append(state)
                ended = bool(set(state) & ENDED)
                rec["held"] = held(j)
                if not ended and not rec["held"]:
                    live.setdefault(comment, set()).add(leader)
            for comment, leaders in live.items():
                self.max_live[comment] = max(self.max_live.get(comment, 0),
                                             len(leaders))

    def leaders(self, launch_id, attempt=1):
        """Distinct Slurm jobs (het leaders) ever seen for one attempt,
        every try of it."""
        tag = f"forge:{launch_id}:{attempt}"
        with self.lock:
            self._fresh()
            return sorted({j["leader"] for j in self.jobs.values()
                           if j["comment"] == tag})

    def tries(self, launch_id, attempt=1):
        """{leader: (try, nodes, states)} of one attempt's jobs."""
        tag = f"forge:{launch_id}:{attempt}"
        with self.lock:
            self._fresh()
            return {j["leader"]: (j["try"], j["nodes"], list(j["states"]))
                    for j in self.jobs.values() if j["comment"] == tag}

    def most_alive(self, launch_id, attempt=1):
        """The most jobs of one attempt seen able to run at once; at least
        1 once one of them ran (a short job released and ended between two
        samples was only ever seen held, then ended)."""
        tag = f"forge:{launch_id}:{attempt}"
        with self.lock:
            self._fresh()
            ran = any(j["comment"] == tag and
                      any(set(s) & RAN for s in j["states"])
                      for j in self.jobs.values())
            return max(self.max_live.get(tag, 0), 1 if ran else 0)

    def ran(self, launch_id, attempt=1):
        """The Slurm jobs (het leaders) of one attempt seen running or
        ended after they ran: those that ran its command. A job cancelled
        while held never did."""
        tag = f"forge:{launch_id}:{attempt}"
        with self.lock:
            self._fresh()
            return sorted({j["leader"] for j in self.jobs.values()
                           if j["comment"] == tag and
                           any(set(s) & RAN
                               for s in j["states"])})

    def close(self):
        self.stopping = True
        self.thread.join(5)


class Worker:
    """One `forge-worker run` process with its own log file."""

    def __init__(self, stack, topics, worker_id, group, logdir, extra_env=None,
                 binary=None):
        self.worker_id = worker_id
        self.log_path = os.path.join(logdir, f"{worker_id}.log")
        env = {k: v for k, v in os.environ.items() if not k.startswith("FORGE_")}
        env.update(stack.env)
        env.update(topics.env())
        env.update({"FORGE_WORKER_ID": worker_id,
                    "FORGE_KAFKA_GROUP_ID": group,
                    "FORGE_POLL_INTERVAL_MS": "500",
                    "FORGE_LOST_GRACE_S": "30",
                    "FORGE_LOG_FORMAT": "json",
                    "FORGE_LOG_LEVEL": "info",
                    # a killed member leaves the group in seconds, not 45 s
                    "FORGE_KAFKA_PROP_SESSION_TIMEOUT_MS": "6000",
                    "FORGE_KAFKA_PROP_HEARTBEAT_INTERVAL_MS": "1000"})
        env.update(extra_env or {})
        for name in [k for k, v in env.items() if v is None]:
            del env[name]  # extra_env's None: the variable unset
        stack.grant(topics, group)
        self.binary = binary or os.environ.get(
            "FORGE_WORKER_BIN", os.path.join(TOP, "build", "forge-worker"))
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([self.binary, "run"], env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.ended_at = None

    def lines(self):
        out = []
        with open(self.log_path, "rb") as f:
            for raw in f:
                try:
                    out.append(json.loads(raw))
                except ValueError:
                    pass  # librdkafka's own stderr lines
        return out

    def logged(self, text):
        return any(text in line.get("msg", "") for line in self.lines())

    def wait_ready(self, timeout=60):
        wait_until(f"{self.worker_id} to be ready",
                   lambda: any(line.get("msg", "").startswith("ready: ")
                               for line in self.lines()) or
                   self._died(), timeout)
        assert self.proc.poll() is None, f"{self.worker_id} exited: {self.tail()}"

    def _died(self):
        return self.proc.poll() is not None

    def terminate(self, timeout=60):
        """SIGTERM; returns the exit code (the worker's bound is 30 s)."""
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout)
        self.ended_at = time.time()
        return rc

    def kill9(self):
        self.proc.kill()
        self.proc.wait(10)
        self.ended_at = time.time()

    def wait_exit(self, timeout):
        rc = self.proc.wait(timeout)
        self.ended_at = time.time()
        return rc

    def tail(self, n=30):
        with open(self.log_path, "rb") as f:
            return b"".join(f.readlines()[-n:]).decode(errors="replace")

    def ownership(self):
        """[(partition, start, end)] from the log: restore start to revoke."""
        out, open_since = [], {}
        for line in self.lines():
            msg = line.get("msg", "")
            parts = msg.split()
            # "partition 3: restoring", "partition 3 revoked: ...", and
            # others ("partition 3: the state topic's end ...")
            if (len(parts) < 3 or parts[0] != "partition" or
                    not parts[1].rstrip(":").isdigit()):
                continue
            p, ts = int(parts[1].rstrip(":")), _epoch(line["ts"])
            if parts[2] == "restoring":
                open_since[p] = ts
            elif parts[2] in ("revoked:", "lost:") and p in open_since:
                out.append((p, open_since.pop(p), ts))
        end = self.ended_at or time.time()
        out.extend((p, start, end) for p, start in open_since.items())
        return out

    def stop_quietly(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.log.close()


def _epoch(ts):
    # "2026-12-03T06:01:02.345Z"
    base = time.mktime(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
    return base + int(ts[20:23]) / 1000.0


# ---- requests ----------------------------------------------------------------

@contextlib.contextmanager
def one_worker(stack, logdir, tag, extra_env=None, logs=True, before_stop=None):
    """The one-worker set-up of a scenario module: its own topics (named
    after tag), one ready worker (extra_env added to its environment), a
    status reader and, with logs, a reader of the logs topic; yields
    (topics, worker, status, logs) or, without logs, (topics, worker,
    status). At the end: the readers closed, before_stop() if given, and
    the worker's SIGTERM must exit 0."""
    topics = Topics(stack, tag)
    worker = Worker(stack, topics, unique_id(f"w{tag[:1]}"), unique_id("g"),
                    logdir, extra_env)
    status = StatusReader(stack, topics.status)
    logs_reader = StatusReader(stack, topics.logs) if logs else None
    try:
        worker.wait_ready()
        yield ((topics, worker, status, logs_reader) if logs
               else (topics, worker, status))
        status.close()
        if logs_reader:
            logs_reader.close()
        if before_stop:
            before_stop()
        assert worker.terminate() == 0, worker.tail()
    finally:
        status.close()
        if logs_reader:
            logs_reader.close()
        worker.stop_quietly()


def archived_files(logs, launch_id, timeout=120):
    """The files of launch_id's logs archive, {name: text}, once its
    logs_archived event is on the logs topic (logs: its StatusReader)."""
    event = wait_until(f"the logs of {launch_id}", lambda: next(
        (e for e in logs.of(launch_id)
         if e["type"] == "forge.launch.logs_archived"), None), timeout)
    with tarfile.open(event["data"]["archive"]["path"], "r:gz") as t:
        return {m.name: t.extractfile(m).read().decode(errors="replace")
                for m in t.getmembers()}


def free_port():
    """A loopback port nothing listens on now (for FORGE_HTTP_LISTEN)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, path):
    """A worker listener's answer: (status, body); status None when
    nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}",
                                    timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return None, str(e)


def unique_id(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def launch(launch_id, command, attempt=1, series="h200", gpus=1, time_limit=5,
           env=None):
    req = {"kind": "launch", "launch_id": launch_id, "attempt": attempt,
           "project": "e2e",
           "image": {"path": "images/e2e.sif", "format": "sif"},
           "command": command,
           "pools": [{"name": "main", "series": series, "nodes": 1,
                      "gpus_per_node": gpus, "tasks_per_node": 1}],
           "time_limit_minutes": time_limit}
    if env:
        req["env"] = env
    return req


def het_launch(launch_id, command, attempt=1):
    req = launch(launch_id, command, attempt)
    req["pools"] = [
        {"name": "trainer", "series": "h200", "nodes": 1, "gpus_per_node": 2,
         "tasks_per_node": 1},
        {"name": "rollout", "series": "a100", "nodes": 1, "gpus_per_node": 1,
         "tasks_per_node": 1}]
    req["roles"] = {"actor": "trainer", "generator": "rollout"}
    return req


def cancel(launch_id, attempt=None):
    req = {"kind": "cancel", "launch_id": launch_id}
    if attempt:
        req["attempt"] = attempt
    return req


def assert_contiguous(events, launch_id):
    """seq 1..n in order, no seq twice, ids <launch_id>/<attempt>/<seq>."""
    seqs = [e["data"]["seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1)), f"{launch_id}: seqs {seqs}"
    for e in events:
        d = e["data"]
        assert e["id"] == f"{launch_id}/{d['attempt']}/{d['seq']}"
        assert e["subject"] == launch_id
        assert e["_headers"].get("content-type") == b"application/cloudevents+json"
    terminal = [e for e in events if e["data"]["state"] in TERMINAL]
    assert len(terminal) <= 1, f"{launch_id}: several terminal events"
