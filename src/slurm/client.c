/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/client.c - the client object, its options, and the small helpers
 * the operations share (client.h, client_int.h). The operations are in
 * ops.c, the HTTP call in http.c, the tokens in auth.c.
 */
#include "base/buf.h"
#include "slurm/client_int.h"
#include "base/util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const status_names[] = {
    [FORGE_SLURM_OK] = "ok",
    [FORGE_SLURM_TRANSPORT] = "transport",
    [FORGE_SLURM_TIMED_OUT] = "timeout",
    [FORGE_SLURM_AUTH] = "auth",
    [FORGE_SLURM_REJECTED] = "rejected",
    [FORGE_SLURM_NOT_FOUND] = "not_found",
    [FORGE_SLURM_SERVER] = "server",
    [FORGE_SLURM_PROTOCOL] = "protocol",
};

const char *forge_slurm_status_name(forge_slurm_status_t s)
{
    return (size_t)s < sizeof(status_names) / sizeof(status_names[0])
               ? status_names[s]
               : "unknown";
}

bool forge_slurm_status_answered(forge_slurm_status_t s)
{
    return s == FORGE_SLURM_OK || s == FORGE_SLURM_NOT_FOUND ||
           s == FORGE_SLURM_REJECTED;
}

bool forge_slurm_status_retriable(forge_slurm_status_t s)
{
    return s == FORGE_SLURM_TRANSPORT || s == FORGE_SLURM_TIMED_OUT ||
           s == FORGE_SLURM_SERVER || s == FORGE_SLURM_PROTOCOL;
}

void forge_slurm_options_from_config(const forge_config_t *cfg,
                                     forge_slurm_options_t *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->base_url = cfg->slurm_rest_url;
    opts->version = cfg->slurm_api_version;
    opts->user = cfg->slurm_user;
    opts->jwt_file = cfg->slurm_jwt_file;
    opts->jwt_key_file = cfg->slurm_jwt_key_file;
    opts->tls_verify = cfg->slurm_tls_verify;
    opts->ca_file = cfg->slurm_tls_ca_file;
    opts->cert_file = cfg->slurm_tls_cert_file;
    opts->key_file = cfg->slurm_tls_key_file;
    opts->connect_timeout_ms = 5000;
    opts->request_timeout_ms = 30000;
    opts->max_attempts = 4;
    opts->backoff_base_ms = 200;
    opts->backoff_max_ms = 5000;
    opts->token_lifetime_s = 300;
    opts->max_body_bytes = 64u << 20;
    opts->max_rps = cfg->slurm_max_rps;
}

forge_rc_t forge_slurm_client_new(const forge_slurm_options_t *opts,
                                  forge_slurm_client_t **out,
                                  forge_error_t *err)
{
    forge_slurm_client_t *c = forge_xcalloc(1, sizeof(*c));
    forge_rc_t rc;

    *out = NULL;
    c->opts = *opts;
    atomic_init(&c->interrupted, false);
    c->base_url = forge_xstrdup(opts->base_url);
    c->user = forge_xstrdup(opts->user);
    c->ca_file = forge_xstrdup(opts->ca_file);
    c->cert_file = forge_xstrdup(opts->cert_file);
    c->key_file = forge_xstrdup(opts->key_file);
    c->opts.base_url = c->base_url;
    c->opts.user = c->user;
    c->opts.ca_file = c->ca_file;
    c->opts.cert_file = c->cert_file;
    c->opts.key_file = c->key_file;
    c->opts.jwt_file = c->opts.jwt_key_file = NULL; /* owned by auth */
    if (c->opts.max_attempts < 1)
        c->opts.max_attempts = 1;
    if (c->opts.backoff_base_ms < 1)
        c->opts.backoff_base_ms = 1;
    if (c->opts.backoff_max_ms < c->opts.backoff_base_ms)
        c->opts.backoff_max_ms = c->opts.backoff_base_ms;
    /* the address too: clients made in the same second (the submit
     * lanes) must not back off in step */
    c->rand_state =
        (unsigned)time(NULL) ^ (unsigned)getpid() ^ (unsigned)(uintptr_t)c;
    if (!c->base_url || !c->user) {
        rc = forge_error_set(err, FORGE_ECONFIG, "FORGE_SLURM_REST_URL",
                             "the slurmrestd client needs a URL and a user");
        goto fail;
    }
    /* a token outlives the longest call (rounded up), plus a second */
    if ((rc = forge_slurm_auth_new(
             opts->user, opts->jwt_file, opts->jwt_key_file,
             opts->token_lifetime_s,
             (int)((c->opts.request_timeout_ms + 999) / 1000) + 1, &c->auth,
             err)))
        goto fail;
    c->budget = forge_slurm_budget_acquire(c->base_url, opts->max_rps);
    c->endpoints = forge_slurm_endpoints_acquire(c->base_url);
    if (!(c->curl = curl_easy_init())) {
        rc = forge_error_set(err, FORGE_EIO, "curl", "curl_easy_init failed");
        goto fail;
    }
    *out = c;
    return FORGE_OK;
fail:
    forge_slurm_client_destroy(c);
    return rc;
}

void forge_slurm_client_destroy(forge_slurm_client_t *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    forge_slurm_auth_destroy(c->auth);
    forge_slurm_budget_release(c->budget);
    forge_slurm_endpoints_release(c->endpoints);
    free(c->base_url);
    free(c->user);
    free(c->ca_file);
    free(c->cert_file);
    free(c->key_file);
    free(c);
}

void forge_slurm_client_interrupt(forge_slurm_client_t *c)
{
    if (c)
        atomic_store(&c->interrupted, true);
}

const char *forge_slurm_client_version_name(const forge_slurm_client_t *c)
{
    return forge_api_version_name(c->opts.version);
}

char *forge_slurm_path(const forge_slurm_client_t *c, const char *plugin,
                       const char *rest)
{
    forge_buf_t b = FORGE_BUF_INIT;

    forge_buf_printf(&b, "/%s/%s/%s", plugin,
                     forge_api_version_name(c->opts.version), rest);
    return forge_buf_take(&b);
}

bool forge_slurm_number(const json_t *v, long long *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return true;
    }
    if (json_is_object(v) && json_is_true(json_object_get(v, "set")) &&
        !json_is_true(json_object_get(v, "infinite"))) {
        *out = json_integer_value(json_object_get(v, "number"));
        return true;
    }
    return false;
}
