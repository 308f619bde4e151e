/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_ping.c - `forge-worker ping`: slurmrestd (the API version served,
 * auth, the controller responding) and Kafka (brokers, topics) as one JSON
 * object on stdout; exit 0 only when both are healthy.
 */
#include "command.h"
#include "kafka/kafka_probe.h"
#include "slurm/client.h"

#include <jansson.h>
#include <stdio.h>

/* {"ok", "url", "api_version", "server", "responding", "error"} */
static json_t *ping_slurm(const forge_config_t *cfg, int *ok)
{
    forge_slurm_client_t *c = NULL;
    forge_slurm_result_t res = {0};
    forge_slurm_ping_t ping = {0};
    const char *error = NULL;

    *ok = 0;
    if (command_slurm_client(cfg, &c))
        error = "the client could not start (token or key file)";
    else if (forge_slurm_check_version(c, &res) != FORGE_SLURM_OK)
        error = res.message;
    else if (forge_slurm_ping(c, &ping, &res) != FORGE_SLURM_OK)
        error = res.message;
    else if (!ping.responding)
        error = "slurmctld does not respond to slurmrestd's ping";
    else
        *ok = 1;
    json_t *o =
        json_pack("{s:b, s:s, s:s, s:s, s:b, s:s?}", "ok", *ok, "url",
                  cfg->slurm_rest_url, "api_version",
                  forge_api_version_name(cfg->slurm_api_version), "server",
                  ping.server, "responding", ping.responding, "error", error);
    forge_slurm_client_destroy(c);
    return o;
}

int cmd_ping(int argc, char **argv)
{
    forge_config_t *cfg = NULL;
    forge_kafka_probe_t kafka;
    int rc, slurm_ok;
    json_t *out, *slurm;

    (void)argv;
    if (argc != 1) {
        fprintf(stderr, "usage: forge-worker ping\n");
        return CLI_EXIT_USAGE;
    }
    if ((rc = command_load_config(FORGE_NEED_SLURM | FORGE_NEED_KAFKA, &cfg)))
        return rc;
    slurm = ping_slurm(cfg, &slurm_ok);
    forge_kafka_probe(cfg, 5000, &kafka);
    out = json_pack("{s:b, s:o, s:{s:b, s:s, s:i, s:b, s:s?}}", "ok",
                    slurm_ok && kafka.ok, "slurmrestd", slurm, "kafka", "ok",
                    kafka.ok, "brokers", cfg->kafka_brokers, "brokers_seen",
                    kafka.brokers, "topics_ok", kafka.topics_ok, "error",
                    kafka.error[0] ? kafka.error : NULL);
    json_dumpf(out, stdout, JSON_COMPACT);
    putchar('\n');
    rc = slurm_ok && kafka.ok ? 0 : 1;
    json_decref(out);
    forge_config_destroy(cfg);
    return rc;
}
