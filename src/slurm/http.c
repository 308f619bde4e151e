/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/http.c - one slurmrestd call with auth, classification and bounded
 * retries (client_int.h).
 *
 * Retry policy: a request of which nothing was sent (connection refused,
 * name or TLS failure) is retried for every call; once anything was sent, a
 * failure (timeout, connection closed or reset, garbled answer), 5xx and
 * unreadable 2xx bodies only for reads. Delays grow exponentially from
 * backoff_base_ms to backoff_max_ms with "equal jitter" (half fixed, half
 * random), and a call makes at most max_attempts requests. An auth refusal
 * makes the token be re-read or re-minted once and sent in one more request
 * (even past max_attempts: that request is no retry of a failure), then the
 * call fails with AUTH.
 *
 * Budget: every request (a retry too) takes a token of the cluster's
 * request budget first (budget.h, FORGE_SLURM_MAX_RPS), waiting for its
 * turn when the bucket is empty.
 *
 * Connections: every call keeps its connection (keep-alive), a submit too,
 * but for the one after an error answer (slurmrestd closes those). When a
 * reused connection turns out closed without an answer, libcurl silently
 * sends the request again on a new one - for a POST too, which slurmrestd
 * may have carried out (Curl_retry_request, lib/transfer.c). So a request
 * body goes to libcurl through a read callback that hands it out once,
 * with a seek callback that refuses every rewind: libcurl can then never
 * send a body a second time, and such a call fails with
 * CURLE_SEND_FAIL_REWIND, classified TIMED_OUT (sent: maybe carried out),
 * which a submit's caller resolves by its tag (client.h). A body given
 * through CURLOPT_POSTFIELDS would be re-sent: libcurl needs no rewind for
 * it (readrewind, lib/multi.c, libcurl 7.88).
 *
 * Endpoints (endpoints.h, issue 39): each request goes to the endpoint
 * picked then, and its outcome is reported (any HTTP answer: answered); a
 * retry that goes to another endpoint than the last starts at once, one
 * that goes to the same waits its backoff. What may be retried does not
 * change: a submit whose request may have been carried out (sent, no
 * answer) is never sent again, to this endpoint or another.
 *
 * Interruption (forge_slurm_client_interrupt, from another thread): the
 * progress callback makes libcurl give up the request under way (it runs
 * while connecting and while waiting for an answer, at least once a
 * second), the backoff and budget sleeps in short slices, and no request or
 * retry starts once the flag is set. The call then ends like a cut-off one.
 */
#include "hooks/hooks.h"
#include "base/buf.h"
#include "clock/clock.h"
#include "log/log.h"
#include "slurm/client_int.h"
#include "base/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct response {
    forge_buf_t body;
    size_t cap;
    bool too_large;
} response_t;

static size_t collect(char *p, size_t size, size_t n, void *userdata)
{
    response_t *r = userdata;

    if (r->body.len + size * n > r->cap) {
        r->too_large = true;
        return 0;
    }
    forge_buf_append(&r->body, p, size * n);
    return size * n;
}

/* A request body, handed to libcurl once (never rewound). */
typedef struct upload {
    const char *data;
    size_t len;
    size_t at;        /* how much libcurl took */
    bool asked_again; /* libcurl asked for the body once more: refused */
} upload_t;

static size_t give_body(char *buf, size_t size, size_t n, void *userdata)
{
    upload_t *u = userdata;
    size_t room = size * n, left = u->len - u->at;

    if (!left) { /* all of it went out once: never again */
        u->asked_again = true;
        return CURL_READFUNC_ABORT;
    }
    if (room > left)
        room = left;
    memcpy(buf, u->data + u->at, room);
    u->at += room;
    return room;
}

/* libcurl asks this before it would send the body again: it may not. */
static int refuse_rewind(void *userdata, curl_off_t offset, int origin)
{
    (void)userdata;
    (void)offset;
    (void)origin;
    return CURL_SEEKFUNC_CANTSEEK;
}

#define SLEEP_SLICE_MS 50 /* how soon a backoff sleep sees an interrupt */
#define INTERRUPTED    "interrupted: the worker is stopping"

static bool interrupted(forge_slurm_client_t *c)
{
    return atomic_load(&c->interrupted);
}

/* Sleeps ms, or less when c is interrupted meanwhile. */
static void sleep_ms(forge_slurm_client_t *c, long ms)
{
    long long until = forge_clock_ms() + ms;
    long long left;

    while ((left = until - forge_clock_ms()) > 0 && !interrupted(c))
        forge_clock_sleep_ms(left < SLEEP_SLICE_MS ? left : SLEEP_SLICE_MS);
}

/* libcurl's progress callback: non-zero aborts the transfer. */
static int on_progress(void *client, curl_off_t dltotal, curl_off_t dlnow,
                       curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    return interrupted(client) ? 1 : 0;
}

static long backoff_ms(forge_slurm_client_t *c, int attempt)
{
    long delay = c->opts.backoff_base_ms;

    for (int i = 1; i < attempt && delay < c->opts.backoff_max_ms; i++)
        delay *= 2;
    if (delay > c->opts.backoff_max_ms)
        delay = c->opts.backoff_max_ms;
    return delay / 2 +
           (long)(rand_r(&c->rand_state) % (unsigned)(delay / 2 + 1));
}

/* errors[0] of a Slurm answer into res (message: "error: description"). */
static void take_errors(const json_t *json, forge_slurm_result_t *res)
{
    const json_t *e = json_array_get(json_object_get(json, "errors"), 0);
    const char *text, *desc;

    if (!e)
        return;
    res->slurm_error =
        (int)json_integer_value(json_object_get(e, "error_number"));
    text = json_string_value(json_object_get(e, "error"));
    desc = json_string_value(json_object_get(e, "description"));
    snprintf(res->message, sizeof(res->message), "slurm error %d: %s%s%s",
             res->slurm_error, text ? text : "", desc && *desc ? ": " : "",
             desc ? desc : "");
}

static void set_message(forge_slurm_result_t *res, const char *fmt, ...)
    FORGE_PRINTF(2, 3);

static void set_message(forge_slurm_result_t *res, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(res->message, sizeof(res->message), fmt, ap);
    va_end(ap);
}

/* Redacts res->message as log lines are (the token, anything shaped like a
 * JWT): an answer echoing the request's headers must not carry the token
 * into logs or status events. */
static void scrub(forge_slurm_result_t *res)
{
    char *clean = forge_log_redact(res->message);

    snprintf(res->message, sizeof(res->message), "%s", clean);
    free(clean);
}

/* TLS: verification (FORGE_SLURM_TLS_VERIFY, warned about at start when
 * off), the CA bundle, and the client certificate and key (mTLS), each
 * only when set (the key checked at start: never readable by others).
 * The CA bundle is read again for every new connection (connections are
 * kept, so that is seldom): libcurl 7.87 and later would otherwise keep
 * the store it parsed for 24 hours (CURLOPT_CA_CACHE_TIMEOUT) wherever it
 * has no default CA path (Debian's has one, /etc/ssl/certs, which keeps
 * that cache off: seen with 7.88.1), and a CA file an operator changed in
 * place (a new CA added beside the old one) would not be seen by a running
 * worker (docs/OPERATING.md, rotation). The certificate and key are read
 * for every new connection too. */
static void set_tls(forge_slurm_client_t *c)
{
    const struct {
        CURLoption option;
        const char *value;
    } files[] = {
        {CURLOPT_CAINFO, c->ca_file},
        {CURLOPT_SSLCERT, c->cert_file},
        {CURLOPT_SSLKEY, c->key_file},
    };

    curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYPEER,
                     c->opts.tls_verify ? 1L : 0L);
    curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYHOST,
                     c->opts.tls_verify ? 2L : 0L);
#if LIBCURL_VERSION_NUM >= 0x075700 /* 7.87.0: the CA store cache */
    curl_easy_setopt(c->curl, CURLOPT_CA_CACHE_TIMEOUT, 0L);
#endif
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        if (files[i].value)
            curl_easy_setopt(c->curl, files[i].option, files[i].value);
}

/* Prepares the handle for one request; returns the header list (new). */
static struct curl_slist *prepare(forge_slurm_client_t *c, const char *url,
                                  const char *method, upload_t *body,
                                  const char *token, response_t *r)
{
    struct curl_slist *h = NULL;
    forge_buf_t line = FORGE_BUF_INIT;
    CURL *curl = c->curl;

    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                     c->opts.connect_timeout_ms);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, c->opts.request_timeout_ms);
    set_tls(c);
    curl_easy_setopt(curl, CURLOPT_FRESH_CONNECT,
                     c->fresh_connection ? 1L : 0L);
    /* one connection per client (a submit lane, the poller): a fresh one
     * replaces the one kept before */
    curl_easy_setopt(curl, CURLOPT_MAXCONNECTS, 1L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, r);
    c->curl_error[0] = '\0';
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, c->curl_error);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, c);
    if (body) { /* once, with its length: never chunked, never rewound */
        curl_easy_setopt(curl, CURLOPT_POST, 1L);
        curl_easy_setopt(curl, CURLOPT_READFUNCTION, give_body);
        curl_easy_setopt(curl, CURLOPT_READDATA, body);
        curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, refuse_rewind);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)body->len);
    }
    forge_buf_printf(&line, "X-SLURM-USER-NAME: %s",
                     c->act_as ? c->act_as : c->user);
    h = curl_slist_append(h, forge_buf_str(&line));
    forge_buf_truncate(&line, 0);
    forge_buf_printf(&line, "X-SLURM-USER-TOKEN: %s", token);
    h = curl_slist_append(h, forge_buf_str(&line));
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json");
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
    memset(line.data, 0, line.len); /* the token */
    forge_buf_clear(&line);
    return h;
}

/* Transport outcome of curl_easy_perform: TRANSPORT while nothing of the
 * request has left, TIMED_OUT once any of it has - slurmrestd may then have
 * carried it out, whatever went wrong after (client.h). A body libcurl
 * wanted to send again (refused) had left once: TIMED_OUT. */
static forge_slurm_status_t classify_curl(CURL *curl, CURLcode rc,
                                          const upload_t *body, bool *sent)
{
    long request_bytes = 0;

    if (rc == CURLE_OK)
        return FORGE_SLURM_OK;
    if (rc == CURLE_SEND_FAIL_REWIND || (body && body->asked_again)) {
        *sent = true;
        return FORGE_SLURM_TIMED_OUT;
    }
    if (curl_easy_getinfo(curl, CURLINFO_REQUEST_SIZE, &request_bytes) !=
        CURLE_OK)
        request_bytes = 1; /* unknown: assume sent */
    *sent = request_bytes > 0;
    return *sent ? FORGE_SLURM_TIMED_OUT : FORGE_SLURM_TRANSPORT;
}

/* Slurm refused the credential: ESLURM_AUTH_* (6000-6099, HTTP 401 from
 * 25.11) or 1007 "Protocol authentication error" (HTTP 511 from 24.11, but
 * 500 on 23.11-24.05 - an expired token there is a 500). */
static bool auth_refused(long code, int slurm_error)
{
    if (code == 401 || code == 403 || code == 511)
        return true;
    return code >= 500 &&
           (slurm_error == 1007 || (slurm_error >= 6000 && slurm_error < 6100));
}

/* The errors of forge_slurm_controller_away (client_int.h), from Slurm's
 * slurm_errno.h. */
static const struct {
    int first, last;
} controller_away[] = {
    {1001, 1004}, /* SLURM_COMMUNICATIONS_{CONNECTION,SEND,RECEIVE,SHUTDOWN} */
    {1800, 1899}, /* SLURMCTLD_COMMUNICATIONS_* */
    {2027, 2027}, /* ESLURM_IN_STANDBY_MODE */
    {5000, 5099}, /* SLURM_PROTOCOL_SOCKET_* */
};

bool forge_slurm_controller_away(int slurm_error)
{
    for (size_t i = 0; i < sizeof(controller_away) / sizeof(*controller_away);
         i++)
        if (slurm_error >= controller_away[i].first &&
            slurm_error <= controller_away[i].last)
            return true;
    return false;
}

/* HTTP outcome: status code and body. */
static forge_slurm_status_t classify_http(long code, const response_t *r,
                                          json_t **json,
                                          forge_slurm_result_t *res)
{
    json_error_t jerr;

    *json = json_loadb(forge_buf_str(&r->body), r->body.len, 0, &jerr);
    if (*json)
        take_errors(*json, res);
    if (code >= 200 && code < 300) {
        if (!*json) {
            set_message(res,
                        "slurmrestd answered 2xx with a body that is "
                        "not JSON: %s",
                        jerr.text);
            return FORGE_SLURM_PROTOCOL;
        }
        return FORGE_SLURM_OK;
    }
    if (auth_refused(code, res->slurm_error))
        return FORGE_SLURM_AUTH;
    if (forge_slurm_controller_away(res->slurm_error))
        return FORGE_SLURM_SERVER; /* whatever the HTTP status: retried */
    if (code == 404 && *json)
        return FORGE_SLURM_NOT_FOUND;
    if (code >= 400 && code < 500) {
        if (!res->message[0])
            set_message(res, "slurmrestd refused the request: %.300s",
                        forge_buf_str(&r->body));
        return FORGE_SLURM_REJECTED;
    }
    if (!res->message[0])
        snprintf(res->message, sizeof(res->message),
                 "slurmrestd answered HTTP %ld", code);
    return FORGE_SLURM_SERVER;
}

static bool should_retry(forge_slurm_status_t st, bool sent,
                         forge_slurm_retry_t retry)
{
    if (st == FORGE_SLURM_TRANSPORT && !sent)
        return true;
    if (retry == FORGE_SLURM_RETRY_NEVER)
        return false;
    return st == FORGE_SLURM_TRANSPORT || st == FORGE_SLURM_TIMED_OUT ||
           st == FORGE_SLURM_SERVER || st == FORGE_SLURM_PROTOCOL;
}

/* What a failed transfer says in res: the kind of failure and libcurl's
 * own words for it, which name a TLS failure's cause ("SSL certificate
 * problem: unable to get local issuer certificate", "no alternative
 * certificate subject name matches target host name ..."). */
static void failure_text(const forge_slurm_client_t *c, CURLcode rc,
                         const upload_t *body, forge_slurm_result_t *res)
{
    if (rc == CURLE_SEND_FAIL_REWIND || body->asked_again)
        set_message(res, "%s",
                    "the connection ended without an answer after the "
                    "request was sent; it is not sent again (slurmrestd "
                    "may have carried it out)");
    else if (rc == CURLE_ABORTED_BY_CALLBACK)
        set_message(res, "%s", INTERRUPTED);
    else if (c->curl_error[0])
        set_message(res, "%s: %s", curl_easy_strerror(rc), c->curl_error);
    else
        set_message(res, "%s", curl_easy_strerror(rc));
}

/* One request. *json set only for answers with a JSON body. */
static forge_slurm_status_t attempt(forge_slurm_client_t *c, const char *url,
                                    const char *method, const char *body,
                                    bool force_token, json_t **json, bool *sent,
                                    forge_slurm_result_t *res)
{
    response_t r = {FORGE_BUF_INIT, c->opts.max_body_bytes, false};
    upload_t upload = {body, body ? strlen(body) : 0, 0, false};
    forge_error_t err = {0};
    const char *token;
    struct curl_slist *headers;
    forge_slurm_status_t st;
    CURLcode rc;
    long long started;

    *json = NULL;
    *sent = true;
    res->http_status = 0;
    res->slurm_error = 0;
    res->message[0] = '\0';
    /* nothing starts once it is; the cluster's budget first (budget.h) */
    if (interrupted(c) || forge_slurm_budget_wait(c->budget, &c->interrupted)) {
        *sent = false;
        set_message(res, INTERRUPTED);
        return FORGE_SLURM_TRANSPORT;
    }
    if (!(token = forge_slurm_auth_token(c->auth, force_token, &err))) {
        set_message(res, "no token: %.400s", err.message);
        return FORGE_SLURM_AUTH;
    }
    headers = prepare(c, url, method, body ? &upload : NULL, token, &r);
    started = forge_clock_ms();
    rc = curl_easy_perform(c->curl);
    curl_slist_free_all(headers);
    res->attempts++;
    if (r.too_large) {
        set_message(res, "the answer is larger than %s",
                    "the configured maximum");
        st = FORGE_SLURM_PROTOCOL;
    } else if ((st = classify_curl(c->curl, rc, body ? &upload : NULL, sent)) !=
               FORGE_SLURM_OK) {
        failure_text(c, rc, &upload, res);
    } else {
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &res->http_status);
        st = classify_http(res->http_status, &r, json, res);
    }
    if (res->message[0])
        scrub(res);
    forge_hooks()->slurm_request(method, url, res->http_status,
                                 forge_slurm_status_answered(st),
                                 forge_clock_ms() - started);
    c->fresh_connection = st != FORGE_SLURM_OK;
    forge_buf_clear(&r.body);
    return st;
}

/* The endpoint a request goes to now (endpoints.h), its URL for path in
 * url (emptied first). */
static size_t endpoint_url(forge_slurm_client_t *c, const char *path,
                           forge_buf_t *url)
{
    const char *base;
    size_t i = forge_slurm_endpoints_pick(c->endpoints, &base);

    forge_buf_truncate(url, 0);
    forge_buf_printf(url, "%s%s", base, path);
    return i;
}

forge_slurm_status_t forge_slurm_call(forge_slurm_client_t *c,
                                      const char *method, const char *path,
                                      const char *body,
                                      forge_slurm_retry_t retry, json_t **json,
                                      forge_slurm_result_t *res)
{
    forge_buf_t url = FORGE_BUF_INIT;
    forge_slurm_status_t st = FORGE_SLURM_TRANSPORT;
    bool sent = false, reauthed = false, reauth_pending = false;
    int limit = c->opts.max_attempts;
    size_t endpoint = 0;
    const char *next_url;

    *json = NULL;
    res->attempts = 0;
    while (res->attempts < limit) {
        bool force = reauth_pending;
        json_decref(*json);
        *json = NULL;
        reauth_pending = false;
        int before = res->attempts;
        endpoint = endpoint_url(c, path, &url);
        st = attempt(c, forge_buf_str(&url), method, body, force, json, &sent,
                     res);
        /* a stop, or no request made (no token), says nothing of it */
        if (res->attempts > before && !interrupted(c))
            forge_slurm_endpoints_report(c->endpoints, endpoint,
                                         res->http_status != 0);
        if (st == FORGE_SLURM_AUTH && !reauthed) {
            reauthed = reauth_pending = true; /* re-read / re-mint once */
            limit++; /* the new token's request is no retry */
            continue;
        }
        if (st == FORGE_SLURM_OK || !should_retry(st, sent, retry) ||
            res->attempts >= limit || interrupted(c))
            break;
        /* another endpoint is there: no backoff before it */
        if (forge_slurm_endpoints_pick(c->endpoints, &next_url) == endpoint)
            sleep_ms(c, backoff_ms(c, res->attempts));
        if (interrupted(c))
            break; /* the last outcome stands */
    }
    if (st != FORGE_SLURM_OK) {
        forge_log_field_t f[] = {{"path", path},
                                 {"status", forge_slurm_status_name(st)}};
        forge_log_fields(FORGE_LOG_DEBUG, f, 2, "slurmrestd %s: %s", method,
                         res->message);
    }
    res->status = st;
    forge_buf_clear(&url);
    return st;
}
