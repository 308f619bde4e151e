/*
 * fake_http.h - a scriptable HTTP server on 127.0.0.1 (libmicrohttpd), to
 * play a misbehaving slurmrestd in the client's fault tests: 500 storms,
 * slow answers, connections closed without an answer, garbage bodies, 401s.
 * A fake only because fault injection on HTTP cannot be done against the
 * real slurmrestd; every well-formed answer it gives is shaped like the
 * real one (tests/integration covers the real server).
 *
 * Replies are taken from a queue in order; when the queue is empty the
 * default reply is given. A reply may also depend on the token: with
 * fake_http_accept_token set, a request carrying another token gets 401.
 * Every request is recorded (method, path with its query, user, token).
 *
 * Threads: libmicrohttpd answers on its own threads (one per connection);
 * the test's thread scripts and reads. `lock` guards the queue, the
 * default, the accepted token and the record.
 */
#ifndef FORGE_TEST_FAKE_HTTP_H
#define FORGE_TEST_FAKE_HTTP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct fake_http fake_http_t;

typedef struct fake_request {
    char method[8];
    char *target; /* path and query as sent, e.g.
                     /slurm/v0.0.43/jobs/state?job_id=1 */
    char *user;   /* X-SLURM-USER-NAME, "" if none */
    char *token;  /* X-SLURM-USER-TOKEN, "" if none */
} fake_request_t;

fake_http_t *fake_http_start(void);  /* asserts on failure */
void fake_http_stop(fake_http_t *f); /* NULL-safe; frees the record */

/* "http://127.0.0.1:<port>" (borrowed). */
const char *fake_http_url(const fake_http_t *f);

/* Queue one reply: status and body (copied), after delay_ms. */
void fake_http_push(fake_http_t *f, int status, const char *body, int delay_ms);

/* Queue one connection closed without any answer. */
void fake_http_push_close(fake_http_t *f);

/* The reply when the queue is empty (default: 200 "{}"). */
void fake_http_default(fake_http_t *f, int status, const char *body);

/* Only this token is accepted (401 otherwise); NULL: any. */
void fake_http_accept_token(fake_http_t *f, const char *token);

size_t fake_http_count(fake_http_t *f);

/* A copy of request i (caller frees with fake_request_clear). */
fake_request_t fake_http_request(fake_http_t *f, size_t i);
void fake_request_clear(fake_request_t *r);

#endif
