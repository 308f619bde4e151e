/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tenants.h - the site's tenants (FORGE_TENANTS_FILE, schemas/tenants.v1.json):
 * which Slurm user each tenant's jobs run as, and that user's uid and gid on
 * the shared storage.
 *
 * Why: every job of a fleet used to run as one Slurm user, so nothing but
 * that user's own discretion kept one launch's files (its credentials, its
 * logs) from another launch's job. With tenants, the worker submits each
 * launch as its tenant's user (slurmrestd's user proxy: a token of
 * SlurmUser or root sending X-SLURM-USER-NAME) and gives the launch's
 * staging folder to that uid with mode 0700, so the jobs of other tenants
 * cannot read it.
 *
 * A request names its tenant (`tenant`), or gets the file's default_tenant;
 * without a site file there are no tenants and every job runs as
 * FORGE_SLURM_REST_USER (a request naming a tenant is then refused). Loaded
 * once at start; immutable, shared by threads.
 */
#ifndef FORGE_TENANTS_H
#define FORGE_TENANTS_H

#include "base/error.h"
#include "request/request.h"

#include <stddef.h>
#include <sys/types.h>

typedef struct forge_tenant {
    char *name;
    char *slurm_user; /* X-SLURM-USER-NAME of its submits */
    uid_t uid;        /* owner of its staging folders */
    gid_t gid;        /* group of its staging folders and archives */
} forge_tenant_t;

typedef struct forge_tenants {
    forge_tenant_t *items;
    size_t count;
    const forge_tenant_t *fallback; /* default_tenant, or NULL */
} forge_tenants_t;

/* Parses a site document. *out is new (forge_tenants_destroy). */
forge_rc_t forge_tenants_parse(const char *buf, size_t len,
                               forge_tenants_t **out,
                               forge_error_t *err) FORGE_WARN_UNUSED;

/* Reads and parses the file at path; errors name FORGE_TENANTS_FILE. */
forge_rc_t forge_tenants_load(const char *path, forge_tenants_t **out,
                              forge_error_t *err) FORGE_WARN_UNUSED;

/*
 * The tenant launch runs as (borrowed from tenants): the one it names, else
 * the default. *out NULL and FORGE_OK when the fleet has no tenants (tenants
 * NULL) and the launch names none. FORGE_ETENANT_UNKNOWN, with the request's
 * JSON path (prefix "$" or "$.data"), when it names one the site does not
 * have, or names none and there is no default.
 */
/* The same for a launch that names `named` (NULL: none); errors say
 * "$.tenant". */
forge_rc_t forge_tenant_named(const forge_tenants_t *tenants, const char *named,
                              const forge_tenant_t **out,
                              forge_error_t *err) FORGE_WARN_UNUSED;

forge_rc_t forge_tenant_of(const forge_tenants_t *tenants,
                           const forge_request_t *req,
                           const forge_tenant_t **out,
                           forge_error_t *err) FORGE_WARN_UNUSED;

void forge_tenants_destroy(forge_tenants_t *t); /* NULL-safe */

#endif
