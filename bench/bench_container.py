#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
bench_container.py - what starting a task in its container costs (issue
37): `apptainer exec --cleanenv IMAGE /bin/true`, as the rendered script
runs each task, against a bare exec of the same /bin/true, both timed
inside the stack's cluster root as a job's task runs there (pivot_root,
the job user: tests/e2e/stack.d/slurm.sh as-job), per task:

  warm   ROUNDS starts in a row, the image's pages in the page cache
  cold   one start right after the image's pages were dropped from the
         page cache (posix_fadvise DONTNEED on the file), ROUNDS times

Prints one JSON line: {"image", "bytes", "warm": {"container", "bare"},
"cold": {"container", "bare"}}, each a list of seconds. A benchmark, not
a test: it never fails on speed.

  bench_container.py [--rounds 20] [--image python]
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "worker"))

from harness import TOP, Stack  # noqa: E402

AS_JOB = ["bash", os.path.join(TOP, "tests", "e2e", "stack.d", "slurm.sh"),
          "as-job"]

# Inside the root: N starts of each, each timed by bash's own clock.
DRIVER = r'''
n=$1 image=$2
for i in $(seq 1 "$n"); do
    t0=$EPOCHREALTIME; apptainer exec --cleanenv "$image" /bin/true; t1=$EPOCHREALTIME
    t2=$EPOCHREALTIME; /bin/true; t3=$EPOCHREALTIME
    echo "$t0 $t1 $t2 $t3"
done
'''


def drop_pages(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def starts(n, image):
    out = subprocess.run(AS_JOB + ["bash", "-c", DRIVER, "driver", str(n),
                                   image], check=True, capture_output=True,
                         text=True).stdout
    pairs = []
    for line in out.splitlines():
        t0, t1, t2, t3 = (float(x) for x in line.split())
        pairs.append((t1 - t0, t3 - t2))
    return pairs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--image", default="python")
    args = ap.parse_args()
    stack = Stack()
    name = f"images/{args.image}.sif"
    host = os.path.join(stack.runtime_root, name)
    cluster = f"{stack.env['FORGE_SLURM_STORAGE_ROOT']}/runtimes/{name}"
    starts(2, cluster)  # the first start of all pays for the root's files
    warm = starts(args.rounds, cluster)
    cold = []
    for _ in range(args.rounds):
        drop_pages(host)
        cold += starts(1, cluster)
    print(json.dumps({
        "image": name, "bytes": os.path.getsize(host),
        "warm": {"container": [c for c, _ in warm], "bare": [b for _, b in warm]},
        "cold": {"container": [c for c, _ in cold], "bare": [b for _, b in cold]}}))


if __name__ == "__main__":
    sys.exit(main())
