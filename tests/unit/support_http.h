/* SPDX-License-Identifier: Apache-2.0 */
/*
 * support_http.h - a scriptable fake slurmrestd for the client's fault tests:
 * an HTTP server (libmicrohttpd) on 127.0.0.1, ephemeral port, that answers
 * what the test scripted - a status and a body, late, or not at all (the
 * connection closed or reset after the request, or raw bytes such as a
 * garbled status line or a body cut short). It is a fake only because fault
 * injection on HTTP cannot be done against the real slurmrestd; the bodies
 * the tests give it are shaped like the real ones (tests/integration runs
 * the client against the real server).
 *
 * Scripting: replies are queued with a path prefix; a request takes the
 * oldest queued reply whose prefix starts its path (so the replies of
 * /slurm/v0.0.43/job/submit and /slurm/v0.0.43/jobs/state do not mix), and
 * the default reply when none matches. With support_http_accept_token set,
 * a request carrying another token gets 401 without taking a reply.
 * Every request is recorded: method, path with its query as sent, the
 * X-SLURM-USER-NAME / X-SLURM-USER-TOKEN headers, the body, and the
 * connection it came on (the client's port). Connections are kept between
 * requests (HTTP/1.1 keep-alive), as slurmrestd keeps them.
 *
 * Threads: libmicrohttpd answers on its own threads (a listening thread and
 * one per connection); the test's thread scripts and reads the record. One
 * mutex guards the queue, the default, the accepted token and the record;
 * support_http_stop() joins every server thread before it frees anything.
 */
#ifndef FORGE_TEST_SUPPORT_HTTP_H
#define FORGE_TEST_SUPPORT_HTTP_H

#include "slurm/client.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct support_http support_http_t;

/* What the server does with a request instead of answering it. */
typedef enum support_http_fault {
    SUPPORT_HTTP_EOF,   /* closes the connection: no answer at all */
    SUPPORT_HTTP_RESET, /* resets it (TCP RST): no answer at all */
    SUPPORT_HTTP_RAW,   /* writes `raw` as it is, then closes */
    SUPPORT_HTTP_HANG,  /* never answers: holds the connection open until
                           support_http_stop (a stopped slurmrestd behind a
                           live socket) */
} support_http_fault_t;

typedef struct support_http_request {
    char method[8];
    char *target;       /* path and query as sent, e.g.
                           /slurm/v0.0.43/jobs/state?job_id=1&job_id=2 */
    char *user;         /* X-SLURM-USER-NAME, "" if none */
    char *token;        /* X-SLURM-USER-TOKEN, "" if none */
    char *body;         /* the request body, "" if none */
    unsigned peer_port; /* the client's port: which connection it came on */
} support_http_request_t;

support_http_t *support_http_start(void);  /* asserts on failure */
void support_http_stop(support_http_t *s); /* NULL-safe; frees everything */

/* "http://127.0.0.1:<port>" (borrowed), and the port alone. */
const char *support_http_url(const support_http_t *s);

/* Client options aimed at s for the tests: API v0.0.43, user "forge",
 * requests of at most 500 ms, 4 attempts with quick backoffs, 300 s minted
 * tokens, 4 KiB bodies; the auth source given (strings borrowed). Tests
 * change fields as they need. */
forge_slurm_options_t support_http_options(const support_http_t *s,
                                           const char *jwt_file,
                                           const char *key_file);

/* A client made from o; the test fails if it cannot be made. */
forge_slurm_client_t *support_http_client(const forge_slurm_options_t *o);
unsigned support_http_port(const support_http_t *s);

/* Queues one answer for paths starting with prefix (NULL: any path):
 * status and body (copied), given after delay_ms. */
void support_http_push(support_http_t *s, const char *prefix, int status,
                       const char *body, int delay_ms);

/* Queues one fault for paths starting with prefix (NULL: any path); raw
 * (copied) only for SUPPORT_HTTP_RAW. */
void support_http_push_fault(support_http_t *s, const char *prefix,
                             support_http_fault_t fault, const char *raw);

/* The answer when no queued reply matches (at start: 200 "{}"). */
void support_http_default(support_http_t *s, int status, const char *body);

/* Only this token is accepted (401 otherwise); NULL: any. */
void support_http_accept_token(support_http_t *s, const char *token);

/* Requests received so far. */
size_t support_http_count(support_http_t *s);

/* A copy of request i, or an empty one past the end (caller frees it with
 * support_http_request_clear). */
support_http_request_t support_http_request(support_http_t *s, size_t i);
void support_http_request_clear(support_http_request_t *r);

/* A loopback port bound and not listening (the socket returned: close it
 * when done): connections to it are refused, as a slurmrestd that is down
 * refuses them. */
int support_http_refusing_port(unsigned *port);

/* A fake slurmrestd beside a private token file, as the client's tests
 * set it up: a new folder /tmp/<prefix>-XXXXXX holding `token` (mode
 * 0600: token and a newline), and the server started. fini stops the
 * server and removes both. */
typedef struct support_http_fixture {
    support_http_t *srv;
    char dir[64];
    char token_file[96];
} support_http_fixture_t;

void support_http_fixture_init(support_http_fixture_t *f, const char *prefix,
                               const char *token);
void support_http_fixture_fini(support_http_fixture_t *f);

#endif
