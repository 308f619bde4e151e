#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The end-to-end tests' Python (tests/e2e/worker): a virtual environment
# under $FORGE_CACHE_DIR/venv on Debian's python3, with the pinned packages
# of tests/e2e/worker/requirements.txt (confluent-kafka: a Kafka client
# independent of the worker's own code, to produce requests and read the
# out topics as the platform would; pytest to run the scenarios;
# kubernetes-validate for deploy/kubernetes/, scripts/check-deploy).
# Idempotent: reinstalls only when the requirements file changed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../../tests/e2e/stack.d/common.sh"

stack_apt_install python3-venv
req="$here/../../tests/e2e/worker/requirements.txt"
venv="$FORGE_CACHE_DIR/venv"
stamp="$venv/.requirements"
if [ -x "$venv/bin/python" ] && cmp -s "$req" "$stamp"; then
	exit 0
fi
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
cp "$req" "$stamp"
stack_log "python: $("$venv/bin/python" -c 'import confluent_kafka, pytest; print("confluent-kafka", confluent_kafka.__version__, "pytest", pytest.__version__)'), $("$venv/bin/kubernetes-validate" --version)"
