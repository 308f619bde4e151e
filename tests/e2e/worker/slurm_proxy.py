# SPDX-License-Identifier: Apache-2.0
"""
slurm_proxy.py - a proxy in front of the stack's real slurmrestd for the
scenarios (and bench/) that must see or hold back the worker's Slurm calls:

  - it records every call (arrival time, method, path) so a test can count
    what the worker asked and when (details calls after a restart, calls
    made after SIGTERM);
  - it can delay each answer (a slow slurmrestd), or stop answering
    altogether (`hang()`: it still accepts connections and reads requests,
    and answers none, as a stopped or cut-off slurmrestd behind a live
    socket does);
  - it can carry the next call of a kind out and close the connection
    without its answer (`unanswer(kind)`: a kept connection closing under
    a request slurmrestd took);
  - it can keep the next call of a kind from slurmrestd until told, then
    carry it out with nobody to answer (`withhold(kind)`, `deliver()`: a
    request slurmrestd held through a slurmctld outage while the worker
    that sent it was killed, reaching slurmctld after its heir acted).

A fake only in that: every answer it gives is the real slurmrestd's.
It speaks plain HTTP on both sides: it proxies to the plain slurmrestd
behind the stack's TLS front (Stack.plain_slurm_url,
FORGE_STACK_SLURM_PLAIN_URL), and the worker it serves is given its
http://127.0.0.1 URL; the TLS front itself is exercised by every other
scenario and by test_tls.py.
"""

import http.client
import http.server
import re
import threading
import time
import urllib.parse

_DETAILS = re.compile(r"^/slurm/[^/]+/job/\d+$")
_ACCOUNTING = re.compile(r"^/slurmdb/[^/]+/job/\d+$")


def kind_of(method, path):
    """states | details | accounting | submit | release | cancel | jobs |
    other"""
    bare = path.split("?", 1)[0]
    if bare.endswith("/jobs/state"):
        return "states"
    if _DETAILS.match(bare):
        return {"DELETE": "cancel", "POST": "release"}.get(method, "details")
    if _ACCOUNTING.match(bare):
        return "accounting"
    if bare.endswith("/job/submit"):
        return "submit"
    if bare.endswith("/jobs") or bare.endswith("/jobs/"):
        return "jobs"
    return "other"


class SlurmProxy:
    def __init__(self, upstream, delay_s=0.0):
        target = urllib.parse.urlsplit(upstream)
        self.upstream = (target.hostname, target.port or 80)
        self.delay_s = delay_s
        self.hanging = False
        self.unanswered = {}  # kind -> how many more to leave unanswered
        self.withholding = None  # the kind of the next call to withhold
        self.withheld = threading.Event()  # that call arrived
        self.delivering = threading.Event()  # carry it out now
        self.released = threading.Event()
        self.lock = threading.Lock()
        self.log = []  # (arrival time.monotonic(), method, path, kind)
        # (arrival, answered, kind, path, request bytes, answer bytes) of
        # each call answered: what the benchmarks weigh (bench/bench_poll.py)
        self.answered = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body: two writes

            def forward(self):
                body = None
                if "Content-Length" in self.headers:
                    body = self.rfile.read(int(self.headers["Content-Length"]))
                with proxy.lock:
                    proxy.log.append((time.monotonic(), self.command, self.path,
                                      kind_of(self.command, self.path)))
                    hanging, delay = proxy.hanging, proxy.delay_s
                if hanging:
                    proxy.released.wait()
                    self.close_connection = True
                    return
                if proxy._withhold(kind_of(self.command, self.path)):
                    proxy.delivering.wait()
                    proxy._upstream(self, body)  # its sender is gone
                    self.close_connection = True
                    return
                if delay:
                    time.sleep(delay)
                arrived = time.monotonic()
                status, data, ctype = proxy._upstream(self, body)
                kind = kind_of(self.command, self.path)
                with proxy.lock:
                    drop = proxy.unanswered.get(kind, 0) > 0
                    if drop:
                        proxy.unanswered[kind] -= 1
                if drop:  # carried out upstream; the answer never comes
                    self.close_connection = True
                    return
                with proxy.lock:
                    proxy.answered.append(
                        (arrived, time.monotonic(),
                         kind_of(self.command, self.path), self.path,
                         len(self.path) + len(body or b""), len(data)))
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = forward

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _upstream(self, handler, body):
        conn = http.client.HTTPConnection(*self.upstream, timeout=60)
        try:
            headers = {k: v for k, v in handler.headers.items()
                       if k.lower() not in ("host", "connection")}
            conn.request(handler.command, handler.path, body=body,
                         headers=headers)
            r = conn.getresponse()
            return (r.status, r.read(),
                    r.getheader("Content-Type", "application/json"))
        finally:
            conn.close()

    def hang(self):
        """From now on no call is answered (they are still counted)."""
        with self.lock:
            self.hanging = True

    def unanswer(self, kind, count=1):
        """The next `count` calls of `kind` are forwarded to slurmrestd,
        and then their connection is closed without the answer."""
        with self.lock:
            self.unanswered[kind] = self.unanswered.get(kind, 0) + count

    def _withhold(self, kind):
        with self.lock:
            if self.withholding != kind:
                return False
            self.withholding = None
        self.withheld.set()
        return True

    def withhold(self, kind):
        """The next call of `kind` is kept from slurmrestd until
        deliver(); then carried out, its answer given to nobody."""
        with self.lock:
            self.withholding = kind

    def deliver(self):
        self.delivering.set()

    def set_delay(self, seconds):
        with self.lock:
            self.delay_s = seconds

    def calls(self, kind=None, since=None):
        """[(time, method, path)] of the calls that arrived (at or after
        `since`, a time.monotonic() value), of one kind or all."""
        with self.lock:
            return [(t, m, p) for t, m, p, k in self.log
                    if (kind is None or k == kind) and
                    (since is None or t >= since)]

    def answers(self, since=None):
        """[(arrival, answered, kind, path, request bytes, answer bytes)]
        of the calls answered (arrived at or after `since`)."""
        with self.lock:
            return [a for a in self.answered if since is None or a[0] >= since]

    def count(self, kind=None, since=None):
        return len(self.calls(kind, since))

    def close(self):
        self.released.set()
        self.delivering.set()
        self.server.shutdown()
        self.server.server_close()
