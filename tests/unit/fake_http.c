/*
 * fake_http.c - the scriptable local HTTP server of fake_http.h.
 */
#include "fake_http.h"
#include "buf.h"
#include "util.h"

#include <criterion/criterion.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct reply {
    int status; /* 0: close the connection, no answer */
    char *body;
    int delay_ms;
    struct reply *next;
} reply_t;

struct fake_http {
    struct MHD_Daemon *daemon;
    char url[64];
    pthread_mutex_t lock;
    reply_t *queue, *tail;
    reply_t fallback;
    char *accept_token;
    fake_request_t *record;
    size_t count;
};

typedef struct query {
    forge_buf_t *target;
    int n;
} query_t;

/* The query string back, in the order sent (repeated keys kept). */
static enum MHD_Result add_arg(void *ctx, enum MHD_ValueKind kind,
                               const char *key, const char *value)
{
    query_t *q = ctx;

    (void)kind;
    forge_buf_printf(q->target, "%c%s%s%s", q->n++ ? '&' : '?', key,
                     value ? "=" : "", value ? value : "");
    return MHD_YES;
}

static const char *header(struct MHD_Connection *c, const char *name)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    return v ? v : "";
}

/* Records the request; the reply to give (a copy, caller frees body). */
static reply_t take_reply(fake_http_t *f, struct MHD_Connection *c,
                          const char *method, const char *url)
{
    forge_buf_t target = FORGE_BUF_INIT;
    fake_request_t *r;
    reply_t out;

    query_t q = {&target, 0};

    forge_buf_puts(&target, url);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &q);
    pthread_mutex_lock(&f->lock);
    f->record = forge_xrealloc(f->record, (f->count + 1) * sizeof(*r));
    r = &f->record[f->count++];
    snprintf(r->method, sizeof(r->method), "%s", method);
    r->target = forge_buf_take(&target);
    r->user = forge_xstrdup(header(c, "X-SLURM-USER-NAME"));
    r->token = forge_xstrdup(header(c, "X-SLURM-USER-TOKEN"));
    if (f->accept_token && strcmp(r->token, f->accept_token) != 0) {
        out = (reply_t){401,
                        forge_xstrdup("{\"errors\": [{\"error\": "
                                      "\"authentication failed\", "
                                      "\"error_number\": 1007}]}"),
                        0, NULL};
    } else if (f->queue) {
        reply_t *head = f->queue;
        f->queue = head->next;
        out = *head;
        free(head);
    } else {
        out = f->fallback;
        out.body = forge_xstrdup(f->fallback.body);
    }
    pthread_mutex_unlock(&f->lock);
    return out;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c,
                              const char *url, const char *method,
                              const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    fake_http_t *f = cls;
    struct MHD_Response *resp;
    enum MHD_Result rc;
    reply_t r;

    (void)version;
    (void)upload;
    if (!*con_cls) { /* first call: headers only */
        *con_cls = f;
        return MHD_YES;
    }
    if (*upload_size) { /* the body: not needed, swallowed */
        *upload_size = 0;
        return MHD_YES;
    }
    r = take_reply(f, c, method, url);
    if (r.delay_ms)
        usleep((useconds_t)r.delay_ms * 1000);
    if (r.status == 0) {
        free(r.body);
        return MHD_NO; /* closes the connection: no answer at all */
    }
    resp = MHD_create_response_from_buffer(strlen(r.body), r.body,
                                           MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, "Content-Type", "application/json");
    rc = MHD_queue_response(c, (unsigned)r.status, resp);
    MHD_destroy_response(resp);
    return rc;
}

fake_http_t *fake_http_start(void)
{
    fake_http_t *f = forge_xcalloc(1, sizeof(*f));
    const union MHD_DaemonInfo *info;

    pthread_mutex_init(&f->lock, NULL);
    f->fallback = (reply_t){200, forge_xstrdup("{}"), 0, NULL};
    f->daemon = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0,
        NULL, NULL, answer, f, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
        MHD_OPTION_END);
    cr_assert_not_null(f->daemon, "cannot start the fake HTTP server");
    info = MHD_get_daemon_info(f->daemon, MHD_DAEMON_INFO_BIND_PORT);
    snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%u",
             (unsigned)info->port);
    return f;
}

void fake_http_stop(fake_http_t *f)
{
    if (!f)
        return;
    MHD_stop_daemon(f->daemon);
    while (f->queue) {
        reply_t *q = f->queue;
        f->queue = q->next;
        free(q->body);
        free(q);
    }
    for (size_t i = 0; i < f->count; i++)
        fake_request_clear(&f->record[i]);
    free(f->record);
    free(f->fallback.body);
    free(f->accept_token);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

const char *fake_http_url(const fake_http_t *f)
{
    return f->url;
}

static void enqueue(fake_http_t *f, int status, const char *body, int delay)
{
    reply_t *r = forge_xcalloc(1, sizeof(*r));

    r->status = status;
    r->body = forge_xstrdup(body ? body : "");
    r->delay_ms = delay;
    pthread_mutex_lock(&f->lock);
    if (f->queue)
        f->tail->next = r;
    else
        f->queue = r;
    f->tail = r;
    pthread_mutex_unlock(&f->lock);
}

void fake_http_push(fake_http_t *f, int status, const char *body, int delay_ms)
{
    enqueue(f, status, body, delay_ms);
}

void fake_http_push_close(fake_http_t *f)
{
    enqueue(f, 0, "", 0);
}

void fake_http_default(fake_http_t *f, int status, const char *body)
{
    pthread_mutex_lock(&f->lock);
    free(f->fallback.body);
    f->fallback = (reply_t){status, forge_xstrdup(body), 0, NULL};
    pthread_mutex_unlock(&f->lock);
}

void fake_http_accept_token(fake_http_t *f, const char *token)
{
    pthread_mutex_lock(&f->lock);
    free(f->accept_token);
    f->accept_token = forge_xstrdup(token);
    pthread_mutex_unlock(&f->lock);
}

size_t fake_http_count(fake_http_t *f)
{
    size_t n;

    pthread_mutex_lock(&f->lock);
    n = f->count;
    pthread_mutex_unlock(&f->lock);
    return n;
}

fake_request_t fake_http_request(fake_http_t *f, size_t i)
{
    fake_request_t copy = {{0}, NULL, NULL, NULL};

    pthread_mutex_lock(&f->lock);
    if (i < f->count) {
        copy = f->record[i];
        copy.target = forge_xstrdup(copy.target);
        copy.user = forge_xstrdup(copy.user);
        copy.token = forge_xstrdup(copy.token);
    }
    pthread_mutex_unlock(&f->lock);
    return copy;
}

void fake_request_clear(fake_request_t *r)
{
    free(r->target);
    free(r->user);
    free(r->token);
    r->target = r->user = r->token = NULL;
}
