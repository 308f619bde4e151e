#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian packages the build and the tests need on the host (bookworm).
# Why each one is here:
#   build-essential cmake pkg-config   the C17 build
#   ccache                 the compiler cache of scripts/build and scripts/fuzz
#                          (a fresh clone's builds hit what earlier ones compiled)
#   clang clang-format libclang-rt-14-dev   the fuzz target (libFuzzer) and formatting checks
#   libcurl4-openssl-dev   the slurmrestd HTTP client (OpenSSL flavour, to share one TLS stack)
#   libjansson-dev         JSON: requests, slurmrestd bodies, events
#   libssl-dev             SHA-256 and TLS
#   libjwt-dev             minting short-lived HS256 tokens for slurmrestd
#   libarchive-dev         tar+gzip log archives
#   libcriterion-dev       unit and integration tests
#   libmicrohttpd-dev      the scripted local HTTP server of the slurmrestd fault tests
#   python3-jsonschema python3-yaml   the schemas checked against their examples
#   curl jq                the stack scripts' readiness probes and the demo
#   ShellCheck (shellcheck)   every shell script linted (scripts/check-shell)
#   gcovr                  line coverage of the unit tests per folder (scripts/coverage)
#   openjdk-17-jdk-headless maven   the Kafka 4 broker from Maven jars
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../../tests/e2e/stack.d/common.sh"

stack_apt_install build-essential cmake pkg-config ccache \
	clang clang-format libclang-rt-14-dev \
	libcurl4-openssl-dev libjansson-dev libssl-dev libjwt-dev \
	libarchive-dev libcriterion-dev libmicrohttpd-dev python3-jsonschema python3-yaml \
	curl jq shellcheck gcovr openjdk-17-jdk-headless maven
