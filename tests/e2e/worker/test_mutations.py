# SPDX-License-Identifier: Apache-2.0
"""
Mutated input at volume (issue 11): hundreds of mutations of valid requests
(deleted fields, wrong types, huge strings, invalid UTF-8, deep nesting,
non-JSON, empty and null keys, values near 1 MiB) go through the requests
topic to one running worker. Every message must end in exactly one of three
ways, each read back from the topics a platform reads (read_committed):

  rejected  a REJECTED event (and nothing else) for its launch_id
  dlq       its exact key and bytes in the DLQ (no usable launch_id); a
            value past FORGE_DLQ_MAX_BYTES as its head, with its length and
            sha256 in headers
  launched  a real launch that reached a terminal state in Slurm

Nothing is lost (every message is accounted for), nothing is doubled, the
worker stays up, and its resident memory after a second round of the same
mutations (with fresh ids) is what it was after the first: a leak per
message would show as growth between the rounds. (With the ASan build, as
scripts/test runs it too, LeakSanitizer at the worker's exit checks instead.)
A few values of 1-2 MiB without a usable launch_id go to a DLQ topic with
the broker's default size limit: before FORGE_DLQ_MAX_BYTES such a record
was refused, its transaction aborted, and the message came back forever.

The mutations are seeded (FORGE_MUTATION_SEED, default 11): a failure names
the mutation so it can be replayed.
"""

import copy
import hashlib
import json
import os
import random

import pytest

from harness import (TERMINAL, StatusReader, Topics, Worker, het_launch,
                     launch, unique_id, wait_until)

# The ASan+UBSan build (scripts/e2e): a leak or a sanitizer report fails it.
pytestmark = pytest.mark.sanitized

ROUNDS = 2
PER_ROUND = int(os.environ.get("FORGE_MUTATIONS_PER_ROUND", "260"))
SEED = int(os.environ.get("FORGE_MUTATION_SEED", "11"))
ONE_MIB = 1 << 20


def sanitized(pid):
    """An AddressSanitizer build: its quarantine holds freed memory on
    purpose, so RSS says nothing; LeakSanitizer at exit checks instead."""
    with open(f"/proc/{pid}/maps") as f:
        return any("libasan" in line for line in f)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


# ---- the valid requests mutated ----------------------------------------------

def base_request(rng, lid):
    """A valid request: one pool or het, with the optional fields filled."""
    req = (het_launch(lid, ["true"]) if rng.random() < 0.3
           else launch(lid, ["/bin/sh", "-c", "exit 0"]))
    req["env"] = {"STEP": "1", "NAME": "mutant"}
    req["secret_env"] = {"API_KEY": "k-" + lid}
    req["labels"] = {"team": "e2e", "run": lid}
    req["ingest"] = {"endpoint": "https://ingest.example/api", "token": "t-" + lid}
    req["owner"] = "alice"
    req["framework"] = {"kind": "custom"}
    return req


def paths(node, prefix=()):
    """Every (path) to a value in a JSON tree, the root excluded."""
    out = []
    items = (node.items() if isinstance(node, dict)
             else enumerate(node) if isinstance(node, list) else ())
    for k, v in items:
        out.append(prefix + (k,))
        out.extend(paths(v, prefix + (k,)))
    return out


def parent_of(doc, path):
    node = doc
    for k in path[:-1]:
        node = node[k]
    return node, path[-1]


def strings_at(doc):
    return [p for p in paths(doc) if isinstance(parent_of(doc, p)[0][p[-1]], str)]


WRONG = [0, -1, 2 ** 63, 1.5, -0.0, True, False, None, [], {}, [1, "a"],
         {"x": 1}, 1e308]


def deep(depth, leaf=1):
    text = "[" * depth + json.dumps(leaf) + "]" * depth
    return text


# Each mutator: (rng, request dict, launch_id) -> (bytes value, note).
# A value that is valid JSON text is built with json.dumps; the others are
# bytes assembled by hand.

def m_delete(rng, req, lid):
    p = rng.choice(paths(req))
    node, k = parent_of(req, p)
    del node[k]
    return json.dumps(req).encode(), f"delete {p}"


def m_wrong_type(rng, req, lid):
    p = rng.choice([p for p in paths(req) if p != ("launch_id",)])
    node, k = parent_of(req, p)
    node[k] = copy.deepcopy(rng.choice(WRONG))
    return json.dumps(req).encode(), f"{p} = {node[k]!r}"


def m_launch_id_wrong_type(rng, req, lid):
    req["launch_id"] = copy.deepcopy(rng.choice(WRONG))
    return json.dumps(req).encode(), f"launch_id = {req['launch_id']!r}"


def m_huge_string(rng, req, lid):
    p = rng.choice(strings_at(req))
    node, k = parent_of(req, p)
    size = rng.choice([64, 65, 257, 16385, 100_000, 600_000])
    if p == ("launch_id",):
        size = max(size, 65)  # 64 would be another valid id, not a mutation
    node[k] = rng.choice("aZ9é-_/") * size
    return json.dumps(req, ensure_ascii=False).encode(), f"{p}: {size} chars"


def m_invalid_utf8(rng, req, lid):
    p = rng.choice(strings_at(req))
    node, k = parent_of(req, p)
    marker = "@@BAD@@"
    node[k] = node[k] + marker
    bad = rng.choice([b"\xff", b"\xc3\x28", b"\xc0\xaf", b"\xed\xa0\x80",
                      b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80"])
    text = json.dumps(req).encode().replace(marker.encode(), bad, 1)
    return text, f"{p} + {bad!r}"


def m_nul_and_escapes(rng, req, lid):
    p = rng.choice(strings_at(req))
    node, k = parent_of(req, p)
    node[k] = node[k] + rng.choice(["\u0000", "\ud800", "\n$(id)", "'`;|&",
                                    "\u202e", "%s%n"])
    return json.dumps(req).encode(), f"{p} escapes"


def m_deep_nesting(rng, req, lid):
    depth = rng.choice([64, 2000, 100_000])
    marker = '"@@DEEP@@"'
    key = rng.choice(["labels", "extra", "command", "pools"])
    req[key] = "@@DEEP@@"
    text = json.dumps(req).replace(marker, deep(depth), 1).encode()
    return text, f"{key}: {depth} levels"


def m_not_json(rng, req, lid):
    text = json.dumps(req).encode()
    choice = rng.randrange(9)
    if choice == 0:
        return text[: rng.randrange(1, len(text))], "truncated"
    if choice == 1:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))), "random bytes"
    if choice == 2:
        return text + b"}garbage", "trailing garbage"
    if choice == 3:
        return b"\xef\xbb\xbf" + text, "BOM"
    if choice == 4:
        return text.replace(b'"', b"'"), "single quotes"
    if choice == 5:
        req["time_limit_minutes"] = "@@NAN@@"
        return json.dumps(req).replace('"@@NAN@@"', "NaN").encode(), "NaN"
    if choice == 6:
        return json.dumps([req]).encode(), "array at the top"
    if choice == 7:
        return json.dumps(lid).encode(), "a string at the top"
    return text.replace(b":", b"=", 1), "= for :"


def m_duplicate_key(rng, req, lid):
    text = json.dumps(req)
    return (text[:-1] + ', "launch_id": 5}').encode(), "launch_id twice"


def m_near_limit(rng, req, lid):
    """A value padded to just below or above the 1 MiB request limit."""
    target = rng.choice([ONE_MIB - 300, ONE_MIB + 10, 2 * ONE_MIB])
    if rng.random() < 0.5:
        req["launch_id"] = 5  # no usable id: to the DLQ, near 1 MiB
    req["labels"]["pad"] = ""
    size = len(json.dumps(req).encode())
    req["labels"]["pad"] = "p" * max(0, target - size)
    return json.dumps(req).encode(), f"{target} bytes, id {req['launch_id']!r}"


def m_cloudevent(rng, req, lid):
    ce = {"specversion": "1.0", "id": "ce-" + lid, "source": "/e2e",
          "type": "forge.launch.requested", "data": req}
    k = rng.choice(["specversion", "id", "source", "type", "data.kind"])
    if k == "data.kind":
        req["kind"] = "cancel"
    elif rng.random() < 0.5:
        del ce[k]
    else:
        ce[k] = rng.choice(["", "2.0", 7, None, "forge.launch.unknown"])
    return json.dumps(ce).encode(), f"cloudevent {k}"


def m_extra_fields(rng, req, lid):
    req[rng.choice(["__proto__", "", "x" * 300, "kind2"])] = {"a": [1, 2]}
    return json.dumps(req).encode(), "unknown field"


def m_valid(rng, req, lid):
    """Mutations that keep the request valid: it must run for real."""
    choice = rng.randrange(3)
    if choice == 0:
        for k in ("env", "labels", "owner", "framework"):
            req.pop(k, None)
        note = "optional fields removed"
    elif choice == 1:
        req["labels"]["note"] = "snowman ☃ and ümlaut"
        note = "unicode label"
    else:
        req["time_limit_minutes"] = 2
        note = "time limit 2"
    return json.dumps(req, ensure_ascii=False).encode(), f"valid: {note}"


MUTATORS = [(m_delete, 12), (m_wrong_type, 14), (m_launch_id_wrong_type, 3),
            (m_huge_string, 8), (m_invalid_utf8, 8), (m_nul_and_escapes, 6),
            (m_deep_nesting, 4), (m_not_json, 8), (m_duplicate_key, 2),
            (m_near_limit, 2), (m_cloudevent, 5), (m_extra_fields, 3),
            (m_valid, 6)]


def key_for(rng, lid):
    return rng.choice([lid.encode()] * 8 +
                      [b"", None, b"\xff\xfe", b"other-key", b"nul\x00key"])


def mutations(rng, tag, count):
    """[(key, value, note)], each value distinct (they carry unique ids)."""
    funcs = [f for f, weight in MUTATORS for _ in range(weight)]
    out, seen = [], set()
    while len(out) < count:
        lid = f"mut{tag}-{len(out)}-{rng.randrange(1 << 30):x}"
        fn = rng.choice(funcs)
        value, note = fn(rng, base_request(rng, lid), lid)
        if value in seen:
            continue
        seen.add(value)
        out.append((lid, key_for(rng, lid), value, f"{fn.__name__}: {note}"))
    return out


# ---- sending and accounting ---------------------------------------------------

def digest(value):
    return hashlib.sha256(value or b"").hexdigest()


def dlq_identity(value, headers):
    """The original value's digest: a value cut to FORGE_DLQ_MAX_BYTES
    names it in a header."""
    cut = headers.get("forge.dlq.value_sha256")
    return cut.decode() if cut else digest(value)


def redacted(value):
    """What the worker's DLQ copy of a request is (kafka/dlq.h): the JSON
    object with its ingest token and every secret_env value replaced."""
    req = json.loads(value)
    if isinstance(req.get("ingest"), dict) and "token" in req["ingest"]:
        req["ingest"]["token"] = "[REDACTED]"
    if isinstance(req.get("secret_env"), dict):
        req["secret_env"] = {k: "[REDACTED]" for k in req["secret_env"]}
    return req


def check_dlq_record(key, value, headers, by_digest):
    """The original key, the original bytes (or their head, with length and
    digest) or, for a request holding secrets, the request with them
    replaced (never a secret), the error and the source in headers."""
    sent = by_digest.get(dlq_identity(value, headers))
    if sent is None:
        return  # another round's
    sent_key, sent_value = sent
    assert key == sent_key, (key, sent_key)
    assert headers.get("forge.error.code"), headers
    assert headers.get("forge.source.topic"), headers
    assert int(headers["forge.source.offset"]) >= 0, headers
    secrets = [b"t-", b"k-"]  # base_request's token and secret_env values
    if "forge.dlq.redacted" in headers:
        assert not any(b'"' + s in value for s in secrets), value[:300]
        if "forge.dlq.value_bytes" not in headers:
            assert json.loads(value) == redacted(sent_value)
    elif "forge.dlq.value_bytes" in headers:
        assert int(headers["forge.dlq.value_bytes"]) == len(sent_value)
        assert sent_value.startswith(value) and len(value) < len(sent_value)
        assert len(value) + len(key or b"") <= 1000000
    else:
        assert value == sent_value

class Round:
    def __init__(self, sent):
        self.sent = sent  # [(lid, key, value, note)]

    def outcome(self, lid, value, dlq_values, events):
        """'rejected', 'dlq', 'launched', 'pending' or a problem string."""
        in_dlq = dlq_values.get(digest(value), 0)
        evs = events.get(lid, [])
        if in_dlq and evs:
            return "both a DLQ record and events"
        if in_dlq:
            return "dlq" if in_dlq == 1 else f"{in_dlq} DLQ records"
        if not evs:
            return "pending"
        states = [e["data"]["state"] for e in evs]
        terminal = [s for s in states if s in TERMINAL]
        if states == ["REJECTED"]:
            return "rejected"
        if states[0] == "REJECTED":
            return f"events after REJECTED: {states}"
        if len(terminal) > 1:
            return f"several terminal events: {states}"
        return "launched" if terminal else "pending"


def send_all(topics, sent):
    # Values near 1 MiB need a producer that lets them through: the
    # broker's limit is what a platform's producer would meet.
    from confluent_kafka import Producer
    p = Producer({**topics.stack.kafka_conf("platform"),
                  "message.max.bytes": 4 * ONE_MIB,
                  "partitioner": "murmur2_random"})
    failed = []
    for lid, key, value, note in sent:
        def report(err, _msg, lid=lid, note=note):
            if err:
                failed.append((lid, note, str(err)))
        p.produce(topics.requests, key=key, value=value, on_delivery=report)
        p.poll(0)
    assert p.flush(60) == 0
    return failed


@pytest.fixture(scope="module")
def fleet(stack, logdir):
    # Requests up to 4 MiB reach the worker (the contract refuses what is
    # over 1 MiB, so the worker must see such messages to refuse them); the
    # DLQ keeps the broker's default limit: a DLQ record of such a message
    # must still fit (FORGE_DLQ_MAX_BYTES), or it would come back forever.
    big = {"max.message.bytes": str(4 * ONE_MIB)}
    topics = Topics(stack, "mut", requests_config=big)
    # Memory is measured as the worker holds it, not as glibc caches it:
    # a fixed mmap threshold returns every large block (the 1-2 MiB
    # messages) at free, and two arenas keep the threads' caches small.
    malloc_env = {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_ARENA_MAX": "2"}
    worker = Worker(stack, topics, unique_id("wm"), unique_id("g"), logdir,
                    extra_env=malloc_env)
    reader = StatusReader(stack, topics.status)
    worker.wait_ready()
    yield topics, worker, reader
    reader.close()
    assert worker.terminate() == 0, worker.tail()
    worker.stop_quietly()


def run_round(topics, worker, reader, rng, tag):
    sent = mutations(rng, tag, PER_ROUND)
    refused = send_all(topics, sent)
    # The broker refuses what exceeds its own limit: those never reached
    # the worker, and are not counted.
    refused_ids = {lid for lid, _, _ in refused}
    assert all("too large" in why.lower() or "size" in why.lower()
               for _, _, why in refused), refused
    sent = [s for s in sent if s[0] not in refused_ids]
    rnd = Round(sent)
    by_digest = {digest(value): (key, value) for _, key, value, _ in sent}
    counts, pending = {}, []

    def settled():
        dlq = {}
        for key, value, headers in topics.read_all(topics.dlq, timeout=2.0):
            check_dlq_record(key, value, headers, by_digest)
            d = dlq_identity(value, headers)
            dlq[d] = dlq.get(d, 0) + 1
        events = reader.all()
        counts.clear()
        pending.clear()
        problems = []
        for lid, _, value, note in sent:
            out = rnd.outcome(lid, value, dlq, events)
            counts[out] = counts.get(out, 0) + 1
            if out == "pending":
                pending.append((lid, note, [e["data"]["state"] for e in events.get(lid, [])]))
            if out not in ("rejected", "dlq", "launched", "pending"):
                problems.append((lid, note, out))
        assert not problems, problems[:10]
        assert worker.proc.poll() is None, worker.tail()
        return counts.get("pending", 0) == 0

    try:
        wait_until("every mutation to be accounted for", settled, 300, step=3)
    finally:
        print(f"round {tag}: {len(sent)} sent ({len(refused)} refused by the "
              f"broker): {counts}; pending: {pending[:10]}")
    return len(sent), dict(counts)


def test_mutations_each_end_rejected_dlq_or_launched_and_rss_stays_flat(fleet):
    topics, worker, reader = fleet
    rng = random.Random(SEED)
    totals, rss = {}, []
    for r in range(ROUNDS):
        n, counts = run_round(topics, worker, reader, rng, f"r{r}")
        for k, v in counts.items():
            totals[k] = totals.get(k, 0) + v
        totals["sent"] = totals.get("sent", 0) + n
        rss.append(rss_kib(worker.proc.pid))
    print(f"mutations: {totals}; worker RSS after each round: {rss} KiB")
    assert totals["sent"] >= 500
    # every kind of ending happened: the mix exercised all three paths
    assert totals.get("rejected", 0) > 0
    assert totals.get("dlq", 0) > 0
    assert totals.get("launched", 0) > 0
    # The second round's messages (same shapes, fresh ids) must not have
    # grown the worker: a per-message leak of even 16 KiB would show here.
    # What a round legitimately keeps (records of ended launches) is small.
    growth = rss[-1] - rss[0]
    if not sanitized(worker.proc.pid):
        assert growth < 4096, f"RSS grew {growth} KiB over a round: {rss}"

    # and the worker still launches
    lid = unique_id("after")
    topics.send(lid, launch(lid, ["true"]))
    done = reader.wait_terminal(lid)
    assert done["data"]["state"] == "SUCCEEDED", reader.states(lid)


def test_wrong_types_in_the_id_fields_of_decided_launches_leave_a_trace(fleet):
    """Issue 25: a request for a launch that has ended, whose `attempt` was
    the string "2", produced no event, no DLQ record and no log line (it fell
    back to attempt 1, decided, and was dropped). Each message naming a
    decided launch now ends one visible way: the DLQ (with a warn line) when
    its attempt cannot be told or was decided otherwise, REJECTED for a
    higher attempt, an info line for a replay of what was decided."""
    topics, worker, reader = fleet
    ok, bad = unique_id("dec"), unique_id("decr")
    topics.send(ok, launch(ok, ["true"]))
    invalid = launch(bad, ["true"])
    invalid["pools"][0]["gpus_per_node"] = "one"
    topics.send(bad, invalid)
    assert reader.wait_terminal(ok)["data"]["state"] == "SUCCEEDED"
    assert reader.wait_terminal(bad)["data"]["state"] == "REJECTED"

    def mutated(attempt, **extra):
        req = launch(ok, ["true"])
        if attempt is ...:
            del req["attempt"]
        else:
            req["attempt"] = attempt
        req.update(extra)
        return json.dumps(req).encode()

    to_dlq = {  # note: value
        'attempt "2"': mutated("2"),
        "attempt 2.5": mutated(2.5),
        "attempt true": mutated(True),
        "attempt null": mutated(None),
        "attempt 0": mutated(0),
        "attempt -1": mutated(-1),
        'attempt "1"': mutated("1"),
        "attempt [2]": mutated([2]),
        "attempt 1, env of the wrong type": mutated(1, env=5),
        "no attempt, env of the wrong type": mutated(..., env=5),
        'CloudEvent, data.attempt "2"': json.dumps({
            "specversion": "1.0", "type": "forge.launch.request",
            "source": "e2e", "id": unique_id("ce"),
            "data": json.loads(mutated("2"))}).encode(),
    }
    for value in to_dlq.values():
        topics.send(ok, value)
    topics.send(bad, json.dumps(invalid).encode())  # the refusal replayed
    topics.send(ok, json.dumps(launch(ok, ["true"])).encode())  # a resend
    higher = launch(ok, ["true"], attempt=3)
    higher["env"] = 5
    topics.send(ok, json.dumps(higher).encode())

    wanted = {digest(v): note for note, v in to_dlq.items()}

    def dlq_seen():
        found = {}
        for key, value, headers in topics.read_all(topics.dlq, timeout=2.0):
            d = dlq_identity(value, headers)
            if d in wanted:
                assert key == ok.encode(), (key, wanted[d])
                found[wanted[d]] = found.get(wanted[d], 0) + 1
        return found if len(found) == len(wanted) else None

    found = wait_until("each mutation of a decided launch in the DLQ",
                       dlq_seen, 120, step=2)
    assert all(n == 1 for n in found.values()), found
    wait_until("attempt 3's REJECTED",
               lambda: any(e["data"]["attempt"] == 3
                           for e in reader.of(ok)), 60)
    # nothing else for either launch: one terminal event per attempt
    assert [(e["data"]["attempt"], e["data"]["state"])
            for e in reader.of(ok)
            if e["data"]["state"] in TERMINAL] == [(1, "SUCCEEDED"),
                                                   (3, "REJECTED")]
    assert reader.states(bad) == ["REJECTED"]

    def logged(launch_id, text):
        return any(line.get("launch_id") == launch_id and
                   text in line.get("msg", "") for line in worker.lines())

    wait_until("the replays' lines",
               lambda: logged(bad, "refused already") and
               logged(ok, "decided already"), 30)
    dlq_lines = [line for line in worker.lines()
                 if "to the DLQ" in line.get("msg", "")
                 and line.get("level") == "warn"]
    assert len(dlq_lines) >= len(to_dlq), dlq_lines[-len(to_dlq):]
