# SPDX-License-Identifier: Apache-2.0
"""
A slurmrestd that answers every call in 10 s never costs the worker its
group membership: the worker's max.poll.interval.ms is set to 8 s here, so
a consume loop that waited on HTTP would be thrown out of the group (its
partitions lost) on the first submit. Between the worker and the real
slurmrestd sits a delaying proxy: a fake only in that it adds latency
(fault injection the real slurmrestd cannot do); every answer is the real
one.
"""

import http.server
import threading
import time
import urllib.error
import urllib.request

from harness import StatusReader, Topics, Worker, launch, unique_id

DELAY_S = 10


def start_proxy(upstream):
    class Slow(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def forward(self):
            body = None
            if "Content-Length" in self.headers:
                body = self.rfile.read(int(self.headers["Content-Length"]))
            time.sleep(DELAY_S)
            req = urllib.request.Request(
                upstream + self.path, data=body, method=self.command,
                headers={k: v for k, v in self.headers.items()
                         if k.lower() not in ("host", "connection")})
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    status, data = r.status, r.read()
                    ctype = r.headers.get("Content-Type", "application/json")
            except urllib.error.HTTPError as e:
                status, data = e.code, e.read()
                ctype = e.headers.get("Content-Type", "application/json")
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = forward

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_ten_second_answers_cost_no_heartbeat(stack, logdir):
    proxy = start_proxy(stack.plain_slurm_url)
    topics = Topics(stack, "slow")
    reader = StatusReader(stack, topics.status)
    worker = Worker(stack, topics, unique_id("ws"), unique_id("g"), logdir, {
        "FORGE_SLURM_REST_URL": f"http://127.0.0.1:{proxy.server_port}",
        "FORGE_KAFKA_PROP_MAX_POLL_INTERVAL_MS": "8000",
        "FORGE_LOG_LEVEL": "debug"})
    try:
        worker.wait_ready(timeout=90)  # the start-up version check is slow too
        lid = unique_id("slow")
        topics.send(lid, launch(lid, ["/bin/sh", "-c", "sleep 1"]))
        done = reader.wait_terminal(lid, timeout=240)
        assert done["data"]["state"] == "SUCCEEDED", reader.states(lid)
        text = open(worker.log_path, errors="replace").read()
        assert "lost" not in text.lower(), worker.tail()
        assert "maximum poll interval" not in text and "MAXPOLL" not in text, \
            worker.tail()
        lateness = [int(line["msg"].split(", ")[1].split()[0])
                    for line in worker.lines()
                    if line.get("msg", "").startswith("poll tick:")]
        # A tick that waited on a 10 s answer would be ~10,000 ms late; a
        # loaded 2-core machine (CI, several scenarios side by side) makes a
        # tick up to ~1.5 s late on its own: half the answer's time tells
        # the two apart without timing the machine.
        assert lateness and max(lateness) < 5000, lateness
        assert worker.terminate() == 0, worker.tail()
    finally:
        reader.close()
        worker.stop_quietly()
        proxy.shutdown()
