# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The compiler cache of the project's builds (scripts/build, scripts/fuzz,
# scripts/test-slurm41), sourced after tests/e2e/stack.d/common.sh: sets
# forge_ccache_args (CMake's compiler launcher, or nothing when ccache is
# not installed) and ccache's settings. The cache lives in
# $FORGE_CACHE_DIR/ccache and is shared by every clone on the machine:
# paths below the checkout ($top) are hashed relative to it, and the
# working directory is not hashed, so a fresh clone elsewhere hits what an
# earlier one compiled (its debug information then names that clone's
# build folder; nothing here reads it). scripts/coverage does not use it
# (its .gcno files record their build folder).
# shellcheck disable=SC2034 # the sourcing script's
forge_ccache_args=()
if command -v ccache >/dev/null 2>&1; then
	# shellcheck disable=SC2154 # $top: the sourcing script's checkout
	export CCACHE_DIR="$FORGE_CACHE_DIR/ccache" CCACHE_BASEDIR="$top" CCACHE_NOHASHDIR=true
	export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-2G}
	forge_ccache_args=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
