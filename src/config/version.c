/* SPDX-License-Identifier: Apache-2.0 */
/*
 * version.c - the version report and the run-time librdkafka check.
 */
#include "config/version.h"
#include "config/config.h"
#include "forge_build.h"

#include <librdkafka/rdkafka.h>

const char *forge_version(void)
{
    return FORGE_BUILD_VERSION;
}

forge_rc_t forge_version_check_runtime(forge_error_t *err)
{
    if (rd_kafka_version() < FORGE_RDKAFKA_MIN_VERSION)
        return forge_error_set(err, FORGE_ECONFIG, "librdkafka",
                               "librdkafka %s is loaded; forge-worker needs "
                               ">= %s to work with Kafka 4 brokers",
                               rd_kafka_version_str(),
                               FORGE_RDKAFKA_MIN_VERSION_STR);
    return FORGE_OK;
}

void forge_version_print(FILE *out)
{
    fprintf(out, "forge-worker %s\n", forge_version());
    fprintf(out, "librdkafka %s\n", rd_kafka_version_str());
    fprintf(out, "slurmrestd API versions:");
    for (int v = 0; v < FORGE_API__COUNT; v++)
        fprintf(out, " %s%s", forge_api_version_name((forge_api_version_t)v),
                v == FORGE_API_DEFAULT ? " (default)" : "");
    fprintf(out, "\n");
}
