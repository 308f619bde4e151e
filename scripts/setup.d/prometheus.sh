#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# promtool, from Debian's prometheus package: CI checks the worker's
# /metrics exposition (tests/unit/test_metrics.c, tests/e2e/worker/test_ops.py)
# with `promtool check metrics` and deploy/prometheus/alerts.yml with
# `promtool check rules`. Only the tool is wanted: the package's Prometheus
# server is kept from starting while it installs (policy-rc.d says no to
# every service start, for the length of the install only).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../../tests/e2e/stack.d/common.sh"

command -v promtool >/dev/null && exit 0
policy=/usr/sbin/policy-rc.d
placed=false
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	placed=true
fi
status=0
stack_apt_install prometheus || status=$?
if $placed; then
	rm -f "$policy"
fi
[ "$status" -eq 0 ] || exit "$status"
stack_log "promtool: $(promtool --version 2>&1 | head -n 1)"
