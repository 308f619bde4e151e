/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe/listener.c - the HTTP listener of listener.h.
 *
 * Threads and ownership: forge_listener_start binds the socket on the
 * caller's thread, then libmicrohttpd serves every connection on one
 * thread of its own (MHD_USE_INTERNAL_POLLING_THREAD), which runs answer()
 * only. answer() reads published facts (health.h's atomics) and renders
 * the registry under its lock (observe.h); it holds nothing of the loop
 * and calls nothing of it. The daemon owns the socket from start on;
 * forge_listener_stop (the caller's thread) stops that thread, then frees.
 */
#include "observe/listener.h"
#include "base/util.h"
#include "observe/health.h"
#include "observe/observe.h"

#include <errno.h>
#include <microhttpd.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONNECTIONS_MAX 32
#define CONNECTION_S    10
#define METRICS_TYPE    "text/plain; version=0.0.4; charset=utf-8"

struct forge_listener {
    struct MHD_Daemon *daemon;
    int port;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status,
                             const char *type, char *body)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        strlen(body), body, MHD_RESPMEM_MUST_FREE);
    enum MHD_Result rc;

    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result probe(struct MHD_Connection *c,
                             void (*verdict)(forge_health_verdict_t *))
{
    forge_health_verdict_t v;

    verdict(&v);
    return reply(c, v.ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE,
                 "application/json", forge_xstrdup(v.body));
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c,
                              const char *url, const char *method,
                              const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
    char *text;

    (void)cls;
    (void)version;
    (void)upload;
    if (!*state) { /* the headers: answer once the (empty) body is in */
        *state = c;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0; /* a body is ignored */
        return MHD_YES;
    }
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
                     forge_xstrdup("GET only\n"));
    if (!strcmp(url, "/healthz"))
        return probe(c, forge_health_live);
    if (!strcmp(url, "/readyz"))
        return probe(c, forge_health_ready);
    if (!strcmp(url, "/metrics") && (text = forge_observe_render()))
        return reply(c, MHD_HTTP_OK, METRICS_TYPE, text);
    return reply(c, MHD_HTTP_NOT_FOUND, "text/plain",
                 forge_xstrdup("not found: /healthz, /readyz, /metrics\n"));
}

/* "host:port" or "[v6]:port" → host and port (new copies in *host, port
 * borrowed from hostport). */
static forge_rc_t split(const char *hostport, char **host, const char **port,
                        forge_error_t *err)
{
    const char *colon = strrchr(hostport, ':');
    const char *h = hostport;
    size_t n;

    if (!colon || !colon[1])
        return forge_error_set(err, FORGE_ECONFIG, "FORGE_HTTP_LISTEN",
                               "FORGE_HTTP_LISTEN=%s is not host:port",
                               hostport);
    n = (size_t)(colon - hostport);
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
        h++;
        n -= 2;
    }
    *host = forge_xstrndup(h, n);
    *port = colon + 1;
    return FORGE_OK;
}

/* A listening socket on hostport; -1 with err set. */
static int bind_socket(const char *hostport, forge_rc_t *rc, forge_error_t *err)
{
    struct addrinfo hints = {0}, *ai = NULL;
    const char *port;
    char *host = NULL;
    int fd = -1, one = 1, gai;

    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    if ((*rc = split(hostport, &host, &port, err)))
        return -1;
    if ((gai = getaddrinfo(*host ? host : NULL, port, &hints, &ai)) != 0) {
        *rc = forge_error_set(err, FORGE_ECONFIG, "FORGE_HTTP_LISTEN",
                              "FORGE_HTTP_LISTEN=%s cannot be resolved: %s",
                              hostport, gai_strerror(gai));
        free(host);
        return -1;
    }
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
        listen(fd, CONNECTIONS_MAX) != 0) {
        int e = errno;
        /* in use: another process (an instance still stopping) has it, and
         * a restart may find it free; anything else is the address */
        *rc = forge_error_set(err, e == EADDRINUSE ? FORGE_EIO : FORGE_ECONFIG,
                              "FORGE_HTTP_LISTEN",
                              "FORGE_HTTP_LISTEN=%s cannot be listened on: %s",
                              hostport, strerror(e));
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    free(host);
    return fd;
}

static int port_of(int fd)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof(sa);

    if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
        return 0;
    if (sa.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
    return ntohs(((struct sockaddr_in *)&sa)->sin_port);
}

forge_rc_t forge_listener_start(const char *hostport, forge_listener_t **out,
                                forge_error_t *err)
{
    forge_listener_t *l;
    forge_rc_t rc = FORGE_OK;
    int fd = bind_socket(hostport, &rc, err);

    *out = NULL;
    if (fd < 0)
        return rc;
    l = forge_xcalloc(1, sizeof(*l));
    l->port = port_of(fd);
    l->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL, NULL, answer,
        NULL, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)CONNECTIONS_MAX, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)CONNECTION_S, MHD_OPTION_END);
    if (!l->daemon) {
        close(fd);
        free(l);
        return forge_error_set(err, FORGE_EIO, "FORGE_HTTP_LISTEN",
                               "FORGE_HTTP_LISTEN=%s: cannot serve HTTP there",
                               hostport);
    }
    *out = l;
    return FORGE_OK;
}

int forge_listener_port(const forge_listener_t *l)
{
    return l ? l->port : 0;
}

void forge_listener_stop(forge_listener_t *l)
{
    if (!l)
        return;
    MHD_stop_daemon(l->daemon); /* closes the listening socket too */
    free(l);
}
