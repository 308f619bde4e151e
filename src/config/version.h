/* SPDX-License-Identifier: Apache-2.0 */
/*
 * version.h - what `forge-worker --version` reports: this build's version,
 * the librdkafka it runs with (checked against the minimum at start), and the
 * slurmrestd API versions it speaks.
 */
#ifndef FORGE_VERSION_H
#define FORGE_VERSION_H

#include "base/error.h"

#include <stdio.h>

/* The lowest librdkafka that can join groups and commit transactions on a
 * Kafka 4 broker (README.md, "What gets installed, and why"). */
#define FORGE_RDKAFKA_MIN_VERSION     0x020b01ff
#define FORGE_RDKAFKA_MIN_VERSION_STR "2.11.1"

const char *forge_version(void);

/* Fails with FORGE_ECONFIG when the librdkafka loaded at run time is older
 * than FORGE_RDKAFKA_MIN_VERSION (a build could link one, run another). */
forge_rc_t forge_version_check_runtime(forge_error_t *err) FORGE_WARN_UNUSED;

/* Prints the three lines of `--version` to out. */
void forge_version_print(FILE *out);

#endif
