/* SPDX-License-Identifier: Apache-2.0 */
/*
 * support_http.c - the scriptable fake slurmrestd of support_http.h (what it
 * is for, and its threads, are written there).
 */
#include "support_http.h"
#include "base/buf.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define ANSWER 0 /* reply_t.fault for a plain answer */

typedef struct reply {
    char *prefix; /* NULL: any path */
    int fault;    /* ANSWER or a support_http_fault_t + 1 */
    int status;
    char *body; /* or the raw bytes */
    int delay_ms;
    struct reply *next;
} reply_t;

struct support_http {
    struct MHD_Daemon *daemon;
    char url[64];
    unsigned port;
    pthread_mutex_t lock;    /* everything below */
    pthread_cond_t released; /* support_http_stop: hanging requests end */
    bool stopping;
    reply_t *queue; /* oldest first */
    int default_status;
    char *default_body;
    char *accept_token;
    support_http_request_t *record;
    size_t count;
};

static void reply_free(reply_t *r)
{
    if (!r)
        return;
    free(r->prefix);
    free(r->body);
    free(r);
}

/* ---- one request (server threads) ---------------------------------------- */

/* The query string back, in the order sent (repeated keys kept). */
static enum MHD_Result add_arg(void *ctx, enum MHD_ValueKind kind,
                               const char *key, const char *value)
{
    forge_buf_t *target = ctx;

    (void)kind;
    forge_buf_printf(target, "%c%s%s%s",
                     strchr(forge_buf_str(target), '?') ? '&' : '?', key,
                     value ? "=" : "", value ? value : "");
    return MHD_YES;
}

static char *header(struct MHD_Connection *c, const char *name)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);

    return forge_xstrdup(v ? v : "");
}

/* The client's end of the connection: its port (0 unknown). */
static unsigned peer_port(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *a = ci ? ci->client_addr : NULL;

    if (!a || a->sa_family != AF_INET)
        return 0;
    return ntohs(((const struct sockaddr_in *)(const void *)a)->sin_port);
}

static void record(support_http_t *s, struct MHD_Connection *c,
                   const char *method, const char *url, forge_buf_t *body)
{
    forge_buf_t target = FORGE_BUF_INIT;
    support_http_request_t *r;

    forge_buf_puts(&target, url);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &target);
    s->record = forge_xrealloc(s->record, (s->count + 1) * sizeof(*r));
    r = &s->record[s->count++];
    snprintf(r->method, sizeof(r->method), "%s", method);
    r->target = forge_buf_take(&target);
    r->user = header(c, "X-SLURM-USER-NAME");
    r->token = header(c, "X-SLURM-USER-TOKEN");
    r->body = forge_xstrdup(forge_buf_str(body));
    r->peer_port = peer_port(c);
}

/* The oldest queued reply for this path, unlinked (NULL: none). */
static reply_t *take_queued(support_http_t *s, const char *url)
{
    for (reply_t **p = &s->queue; *p; p = &(*p)->next) {
        reply_t *r = *p;
        if (!r->prefix || !strncmp(url, r->prefix, strlen(r->prefix))) {
            *p = r->next;
            return r;
        }
    }
    return NULL;
}

/* Records the request and picks its reply (new: reply_free). */
static reply_t *pick(support_http_t *s, struct MHD_Connection *c,
                     const char *method, const char *url, forge_buf_t *body)
{
    reply_t *r;

    pthread_mutex_lock(&s->lock);
    record(s, c, method, url, body);
    if (s->accept_token &&
        strcmp(s->record[s->count - 1].token, s->accept_token) != 0) {
        r = forge_xcalloc(1, sizeof(*r));
        r->status = 401;
        r->body = forge_xstrdup(
            "{\"errors\": [{\"description\": \"Authentication failure\", "
            "\"error_number\": 6000, \"error\": \"Invalid authentication "
            "credential\", \"source\": \"rest_authenticate_http_request()\"}"
            "], \"warnings\": []}");
    } else if (!(r = take_queued(s, url))) {
        r = forge_xcalloc(1, sizeof(*r));
        r->status = s->default_status;
        r->body = forge_xstrdup(s->default_body);
    }
    pthread_mutex_unlock(&s->lock);
    return r;
}

/* The connection's own socket (thread-per-connection: this thread's). */
static int socket_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

    return ci ? ci->connect_fd : -1;
}

/* Acts out a fault; MHD_NO makes libmicrohttpd close the connection. */
static enum MHD_Result fault(support_http_t *s, struct MHD_Connection *c,
                             const reply_t *r)
{
    int fd = socket_of(c);

    if (r->fault == SUPPORT_HTTP_HANG + 1) {
        pthread_mutex_lock(&s->lock);
        while (!s->stopping)
            pthread_cond_wait(&s->released, &s->lock);
        pthread_mutex_unlock(&s->lock);
    } else if (r->fault == SUPPORT_HTTP_RESET + 1 && fd >= 0) {
        /* Linux: connect() to AF_UNSPEC aborts a TCP connection with a RST
         * at once, and the fd stays libmicrohttpd's to close. (SO_LINGER 0
         * would not do: libmicrohttpd shuts the socket down, FIN, before it
         * closes it.) */
        struct sockaddr unspec = {.sa_family = AF_UNSPEC};
        (void)!connect(fd, &unspec, sizeof(unspec));
    } else if (r->fault == SUPPORT_HTTP_RAW + 1 && fd >= 0) {
        (void)!send(fd, r->body, strlen(r->body), MSG_NOSIGNAL);
    }
    return MHD_NO;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c,
                              const char *url, const char *method,
                              const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    support_http_t *s = cls;
    forge_buf_t *body = *con_cls;
    struct MHD_Response *resp;
    enum MHD_Result rc;
    reply_t *r;

    (void)version;
    if (!body) { /* first call: headers only */
        body = forge_xcalloc(1, sizeof(*body));
        *con_cls = body;
        return MHD_YES;
    }
    if (*upload_size) { /* a piece of the body */
        forge_buf_append(body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    r = pick(s, c, method, url, body);
    if (r->delay_ms)
        usleep((useconds_t)r->delay_ms * 1000);
    if (r->fault != ANSWER) {
        rc = fault(s, c, r);
    } else {
        resp = MHD_create_response_from_buffer(strlen(r->body), r->body,
                                               MHD_RESPMEM_MUST_COPY);
        MHD_add_response_header(resp, "Content-Type", "application/json");
        rc = MHD_queue_response(c, (unsigned)r->status, resp);
        MHD_destroy_response(resp);
    }
    reply_free(r);
    return rc;
}

/* Frees a request's body buffer, however the request ended. */
static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    forge_buf_t *body = *con_cls;

    (void)cls;
    (void)c;
    (void)toe;
    if (body) {
        forge_buf_clear(body);
        free(body);
        *con_cls = NULL;
    }
}

/* ---- the test's side ----------------------------------------------------- */

support_http_t *support_http_start(void)
{
    support_http_t *s = forge_xcalloc(1, sizeof(*s));
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    const union MHD_DaemonInfo *info;

    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->released, NULL);
    s->default_status = 200;
    s->default_body = forge_xstrdup("{}");
    s->daemon = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0,
        NULL, NULL, answer, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_NOTIFY_COMPLETED, completed, s,
        MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
    cr_assert_not_null(s->daemon, "cannot start the fake slurmrestd");
    info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    cr_assert(info && info->port, "the fake slurmrestd has no port");
    s->port = info->port;
    snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%u", s->port);
    return s;
}

void support_http_stop(support_http_t *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true; /* hanging requests end: their threads can join */
    pthread_cond_broadcast(&s->released);
    pthread_mutex_unlock(&s->lock);
    MHD_stop_daemon(s->daemon); /* joins every server thread */
    while (s->queue) {
        reply_t *r = s->queue;
        s->queue = r->next;
        reply_free(r);
    }
    for (size_t i = 0; i < s->count; i++)
        support_http_request_clear(&s->record[i]);
    free(s->record);
    free(s->default_body);
    free(s->accept_token);
    pthread_cond_destroy(&s->released);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

const char *support_http_url(const support_http_t *s)
{
    return s->url;
}

unsigned support_http_port(const support_http_t *s)
{
    return s->port;
}

static void enqueue(support_http_t *s, const char *prefix, int fault,
                    int status, const char *body, int delay_ms)
{
    reply_t *r = forge_xcalloc(1, sizeof(*r)), **p;

    r->prefix = prefix && *prefix ? forge_xstrdup(prefix) : NULL;
    r->fault = fault;
    r->status = status;
    r->body = forge_xstrdup(body ? body : "");
    r->delay_ms = delay_ms;
    pthread_mutex_lock(&s->lock);
    for (p = &s->queue; *p; p = &(*p)->next)
        ;
    *p = r;
    pthread_mutex_unlock(&s->lock);
}

void support_http_push(support_http_t *s, const char *prefix, int status,
                       const char *body, int delay_ms)
{
    enqueue(s, prefix, ANSWER, status, body, delay_ms);
}

void support_http_push_fault(support_http_t *s, const char *prefix,
                             support_http_fault_t fault, const char *raw)
{
    enqueue(s, prefix, (int)fault + 1, 0, raw, 0);
}

void support_http_default(support_http_t *s, int status, const char *body)
{
    pthread_mutex_lock(&s->lock);
    free(s->default_body);
    s->default_status = status;
    s->default_body = forge_xstrdup(body ? body : "");
    pthread_mutex_unlock(&s->lock);
}

void support_http_accept_token(support_http_t *s, const char *token)
{
    pthread_mutex_lock(&s->lock);
    free(s->accept_token);
    s->accept_token = forge_xstrdup(token);
    pthread_mutex_unlock(&s->lock);
}

size_t support_http_count(support_http_t *s)
{
    size_t n;

    pthread_mutex_lock(&s->lock);
    n = s->count;
    pthread_mutex_unlock(&s->lock);
    return n;
}

support_http_request_t support_http_request(support_http_t *s, size_t i)
{
    support_http_request_t copy = {{0}, NULL, NULL, NULL, NULL, 0};

    pthread_mutex_lock(&s->lock);
    if (i < s->count) {
        copy = s->record[i];
        copy.target = forge_xstrdup(copy.target);
        copy.user = forge_xstrdup(copy.user);
        copy.token = forge_xstrdup(copy.token);
        copy.body = forge_xstrdup(copy.body);
    }
    pthread_mutex_unlock(&s->lock);
    return copy;
}

void support_http_request_clear(support_http_request_t *r)
{
    free(r->target);
    free(r->user);
    free(r->token);
    free(r->body);
    r->target = r->user = r->token = r->body = NULL;
}

forge_slurm_options_t support_http_options(const support_http_t *s,
                                           const char *jwt_file,
                                           const char *key_file)
{
    forge_slurm_options_t o = {
        .base_url = support_http_url(s),
        .version = FORGE_API_V0_0_43,
        .user = "forge",
        .jwt_file = jwt_file,
        .jwt_key_file = key_file,
        .tls_verify = true,
        .connect_timeout_ms = 500,
        .request_timeout_ms = 500,
        .max_attempts = 4,
        .backoff_base_ms = 10,
        .backoff_max_ms = 40,
        .token_lifetime_s = 300,
        .max_body_bytes = 4096,
    };
    return o;
}

forge_slurm_client_t *support_http_client(const forge_slurm_options_t *o)
{
    forge_slurm_client_t *c = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_slurm_client_new(o, &c, &err), FORGE_OK, "%s",
                 err.message);
    return c;
}

void support_http_fixture_init(support_http_fixture_t *f, const char *prefix,
                               const char *token)
{
    size_t len = strlen(token) + 1;
    int fd;

    snprintf(f->dir, sizeof(f->dir), "/tmp/%s-XXXXXX", prefix);
    cr_assert_not_null(mkdtemp(f->dir));
    snprintf(f->token_file, sizeof(f->token_file), "%s/token", f->dir);
    fd = open(f->token_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(dprintf(fd, "%s\n", token), (int)len);
    close(fd);
    f->srv = support_http_start();
}

void support_http_fixture_fini(support_http_fixture_t *f)
{
    support_http_stop(f->srv);
    unlink(f->token_file);
    rmdir(f->dir);
}

int support_http_refusing_port(unsigned *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}
