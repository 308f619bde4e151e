/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request_check.h - the LaunchRequest rules that need this worker's
 * configuration: the image is a regular file beneath the runtime root and
 * matches the runtime profile's format; mount sources lie under the storage
 * root or an allowed prefix, are reached there with no link in any
 * component (safe_fs.h), and are not, contain nor lie in the worker's
 * staging or artifacts folder, the storage root itself or a worker secret
 * file; every pool's GPU series is known and pinned by a constraint.
 *
 * Run after forge_request_parse(); the error's field is a JSON path into the
 * document as received. Reads the file system (what exists, by descriptors,
 * never following a link under a root), nothing else; the places no mount
 * may reach come from forbidden.h's shared snapshot, revalidated at each
 * call. Thread-safe.
 */
#ifndef FORGE_REQUEST_CHECK_H
#define FORGE_REQUEST_CHECK_H

#include "config/config.h"
#include "request/request.h"
#include "request/series.h"

/* FORGE_OK for a cancel request: it has nothing to check here. */
forge_rc_t forge_request_check(const forge_request_t *req,
                               const forge_config_t *cfg,
                               const forge_series_catalog_t *catalog,
                               forge_error_t *err) FORGE_WARN_UNUSED;

#endif
