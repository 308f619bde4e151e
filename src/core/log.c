/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.c - the process-wide logger of log.h: formatting, redaction, output.
 *
 * Threads: every public function takes `lock`, which guards the
 * configuration and the secret list; a line is built and written under it,
 * so lines never interleave and a secret removed by one thread is never half
 * redacted in another's line. Secrets are counted: two holders of one value
 * (two launches with the same token) each add and remove it, and it stays
 * redacted until the last one lets go.
 */
#include "core/log.h"
#include "core/buf.h"
#include "core/timestamp.h"
#include "core/utf8.h"
#include "core/util.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LINE_MAX_BYTES (64 * 1024)
#define SECRET_MIN_LEN 4

/* The registered secrets: an array with two hash indexes over it, each
 * chained through the slots (slot numbers + 1; 0: a chain's end):
 *   - by the whole text (heads, next): what add and remove look up (a
 *     worker holding 100,000 launches registers as many secrets, and a
 *     linear search made each restore quadratic);
 *   - by the first min(len, WINDOW_MAX) bytes (wheads, wnext): what a
 *     line's redaction looks up at each of its positions, for each window
 *     length some secret has (wlens), instead of searching the line for
 *     every secret (7.6 ms a line with 200,000 of them).
 * Both tables have nheads heads (0 or a power of two). */
#define WINDOW_MAX 32

typedef struct secret {
    char *text;
    uint32_t len;
    uint32_t refs; /* holders that added it and did not remove it yet */
    uint32_t hash, whash;
    uint32_t wlen;
    uint32_t next, wnext; /* slot numbers + 1 */
} secret_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    forge_log_level_t level;
    forge_log_format_t format;
    int fd;
    char *worker_id;
    secret_t *secrets;
    size_t nsecrets, capacity;
    uint32_t *heads, *wheads;
    size_t nheads;
    size_t wlens[WINDOW_MAX + 1]; /* secrets by window length */
} logger = {FORGE_LOG_INFO, FORGE_LOG_JSON, 2, NULL, NULL, 0, 0,
            NULL,           NULL,           0, {0}};

static const char *const sensitive_keys[] = {
    "token", "secret", "password", "authorization", "jwt", "credential", NULL,
};

/* ---- redaction -------------------------------------------------------- */

static bool is_b64url(int c)
{
    return isalnum(c) || c == '-' || c == '_';
}

static size_t b64url_run(const char *s, size_t i, size_t n)
{
    size_t j = i;

    while (j < n && is_b64url((unsigned char)s[j]))
        j++;
    return j - i;
}

/* Length of a JWT starting at s[i] (header "eyJ..." . payload . sig), or 0. */
static size_t jwt_len_at(const char *s, size_t i, size_t n)
{
    size_t j = i, run;

    if (n - i < 3 || memcmp(s + i, "eyJ", 3) != 0)
        return 0;
    if (i > 0 && is_b64url((unsigned char)s[i - 1]))
        return 0;
    for (int part = 0; part < 3; part++) {
        run = b64url_run(s, j, n);
        if (part < 2 && (run < 2 || j + run >= n || s[j + run] != '.'))
            return 0;
        j += run + (part < 2 ? 1 : 0);
    }
    return j - i;
}

static uint32_t window_hash(const char *s, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a, then the length mixed in */

    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h ^ (uint32_t)len * 0x9e3779b1u;
}

/* Every occurrence of every registered secret in s[0..n), as runs: at each
 * position, for each window length some secret has, the secrets whose
 * first bytes hash as the window there (the top comment). Under lock. */
static void find_secrets(forge_redact_runs_t *runs, const char *s, size_t n)
{
    for (size_t w = SECRET_MIN_LEN; w <= WINDOW_MAX && w <= n; w++) {
        if (!logger.wlens[w])
            continue;
        for (size_t i = 0; i + w <= n; i++) {
            uint32_t h = window_hash(s + i, w);
            size_t j = logger.wheads[h & (logger.nheads - 1)];
            for (; j; j = logger.secrets[j - 1].wnext) {
                const secret_t *e = &logger.secrets[j - 1];
                if (e->whash == h && e->wlen == w && e->len <= n - i &&
                    !memcmp(e->text, s + i, e->len))
                    forge_redact_add(runs, i, i + e->len);
            }
        }
    }
}

/* Appends s[0..n) to out with every registered secret and JWT-shaped run
 * replaced (redact.h). */
static void redact_into(forge_buf_t *out, const char *s, size_t n)
{
    forge_redact_runs_t runs = {NULL, 0};

    if (logger.nsecrets)
        find_secrets(&runs, s, n);
    for (size_t i = 0; i + 3 <= n; i++) {
        size_t len = jwt_len_at(s, i, n);
        if (len) {
            forge_redact_add(&runs, i, i + len);
            i += len - 1;
        }
    }
    forge_redact_write(out, s, n, 0, &runs, NULL);
    forge_redact_clear(&runs);
}

static bool key_is_sensitive(const char *key)
{
    char lower[64];
    size_t n = strnlen(key, sizeof(lower) - 1);

    for (size_t i = 0; i < n; i++)
        lower[i] = (char)tolower((unsigned char)key[i]);
    lower[n] = '\0';
    for (size_t i = 0; sensitive_keys[i]; i++)
        if (strstr(lower, sensitive_keys[i]))
            return true;
    return false;
}

/* ---- encoding --------------------------------------------------------- */

/* JSON string body: escapes, and U+FFFD for bytes that are not UTF-8. */
static void json_escape(forge_buf_t *out, const char *text, size_t n)
{
    const unsigned char *s = (const unsigned char *)text;

    for (size_t i = 0; i < n;) {
        size_t len = forge_utf8_len(s + i, n - i);
        if (!len) {
            forge_buf_puts(out, "\\ufffd");
            i++;
        } else if (s[i] == '"' || s[i] == '\\') {
            forge_buf_putc(out, '\\');
            forge_buf_putc(out, (char)s[i++]);
        } else if (s[i] < 0x20 || s[i] == 0x7f) {
            forge_buf_printf(out, "\\u%04x", s[i++]);
        } else {
            forge_buf_append(out, s + i, len);
            i += len;
        }
    }
}

/* Text format: control characters as \xNN, the rest as is. */
static void text_escape(forge_buf_t *out, const char *text, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c < 0x20 || c == 0x7f)
            forge_buf_printf(out, "\\x%02x", c);
        else
            forge_buf_putc(out, (char)c);
    }
}

static void put_text(forge_buf_t *out, const char *raw, bool whole_secret)
{
    forge_buf_t clean = FORGE_BUF_INIT;

    if (whole_secret)
        forge_buf_puts(&clean, FORGE_REDACTED);
    else
        redact_into(&clean, raw ? raw : "", raw ? strlen(raw) : 0);
    if (clean.len > LINE_MAX_BYTES) {
        forge_buf_truncate(&clean, LINE_MAX_BYTES);
        forge_buf_puts(&clean, "...(truncated)");
    }
    if (logger.format == FORGE_LOG_JSON)
        json_escape(out, forge_buf_str(&clean), clean.len);
    else
        text_escape(out, forge_buf_str(&clean), clean.len);
    forge_buf_clear(&clean);
}

static void put_time(forge_buf_t *out)
{
    struct timespec ts;
    char stamp[FORGE_TIMESTAMP_MAX];

    clock_gettime(CLOCK_REALTIME, &ts);
    forge_timestamp_format((long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
                           stamp, sizeof(stamp));
    forge_buf_puts(out, stamp);
}

static void build_line(forge_buf_t *out, forge_log_level_t level,
                       const char *msg, const forge_log_field_t *fields,
                       size_t nfields)
{
    bool json = logger.format == FORGE_LOG_JSON;

    forge_buf_puts(out, json ? "{\"ts\":\"" : "");
    put_time(out);
    forge_buf_printf(out, json ? "\",\"level\":\"%s\"" : " %-5s",
                     forge_log_level_name(level));
    if (logger.worker_id) {
        forge_buf_puts(out, json ? ",\"worker\":\"" : " worker=");
        put_text(out, logger.worker_id, false);
        forge_buf_puts(out, json ? "\"" : "");
    }
    forge_buf_puts(out, json ? ",\"msg\":\"" : " ");
    put_text(out, msg, false);
    forge_buf_puts(out, json ? "\"" : "");
    for (size_t i = 0; i < nfields; i++) {
        forge_buf_puts(out, json ? ",\"" : " ");
        put_text(out, fields[i].key, false);
        forge_buf_puts(out, json ? "\":\"" : "=");
        put_text(out, fields[i].value, key_is_sensitive(fields[i].key));
        forge_buf_puts(out, json ? "\"" : "");
    }
    forge_buf_puts(out, json ? "}\n" : "\n");
}

/* ---- public ----------------------------------------------------------- */

void forge_log_configure(forge_log_level_t level, forge_log_format_t format,
                         int fd, const char *worker_id)
{
    pthread_mutex_lock(&lock);
    logger.level = level;
    logger.format = format;
    logger.fd = fd;
    free(logger.worker_id);
    logger.worker_id = forge_xstrdup(worker_id);
    pthread_mutex_unlock(&lock);
}

static uint32_t secret_hash(const char *text)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    for (; *text; text++)
        h = (h ^ (unsigned char)*text) * 16777619u;
    return h;
}

/* The secret's slot number, or -1. Under lock. */
static ptrdiff_t find_secret(const char *text, uint32_t hash)
{
    size_t i = logger.nheads ? logger.heads[hash & (logger.nheads - 1)] : 0;

    for (; i; i = logger.secrets[i - 1].next)
        if (logger.secrets[i - 1].hash == hash &&
            !strcmp(logger.secrets[i - 1].text, text))
            return (ptrdiff_t)(i - 1);
    return -1;
}

/* The link that points at slot s in its chain. Under lock. */
static uint32_t *link_to(size_t s)
{
    uint32_t *link =
        &logger.heads[logger.secrets[s].hash & (logger.nheads - 1)];

    while (*link != s + 1)
        link = &logger.secrets[*link - 1].next;
    return link;
}

/* The link that points at slot s in its window chain. Under lock. */
static uint32_t *wlink_to(size_t s)
{
    uint32_t *link =
        &logger.wheads[logger.secrets[s].whash & (logger.nheads - 1)];

    while (*link != s + 1)
        link = &logger.secrets[*link - 1].wnext;
    return link;
}

/* Slot i into both indexes' chains. Under lock. */
static void link_slot(size_t i)
{
    secret_t *e = &logger.secrets[i];
    uint32_t *head = &logger.heads[e->hash & (logger.nheads - 1)],
             *whead = &logger.wheads[e->whash & (logger.nheads - 1)];

    e->next = *head;
    *head = i + 1;
    e->wnext = *whead;
    *whead = i + 1;
}

/* Room for one more slot, the indexes rebuilt when it grows. Under lock. */
static void secret_room(void)
{
    if (logger.nsecrets < logger.capacity)
        return;
    logger.capacity = logger.capacity ? 2 * logger.capacity : 16;
    logger.secrets =
        forge_xrealloc(logger.secrets, logger.capacity * sizeof(secret_t));
    logger.nheads = logger.capacity;
    free(logger.heads);
    free(logger.wheads);
    logger.heads = forge_xcalloc(logger.nheads, sizeof(uint32_t));
    logger.wheads = forge_xcalloc(logger.nheads, sizeof(uint32_t));
    for (size_t i = 0; i < logger.nsecrets; i++)
        link_slot(i);
}

static void wipe_free(char *text)
{
    if (text)
        explicit_bzero(text, strlen(text));
    free(text);
}

forge_rc_t forge_log_secret_add(const char *secret)
{
    uint32_t h;
    ptrdiff_t slot;
    size_t len = secret ? strlen(secret) : 0, w;

    if (!secret || len < SECRET_MIN_LEN)
        return FORGE_EINVAL;
    h = secret_hash(secret);
    w = len < WINDOW_MAX ? len : WINDOW_MAX;
    pthread_mutex_lock(&lock);
    if ((slot = find_secret(secret, h)) >= 0) {
        logger.secrets[slot].refs++;
    } else {
        secret_room();
        logger.secrets[logger.nsecrets] = (secret_t){
            forge_xstrdup(secret), len, 1, h, window_hash(secret, w), w, 0, 0};
        link_slot(logger.nsecrets++);
        logger.wlens[w]++;
    }
    pthread_mutex_unlock(&lock);
    return FORGE_OK;
}

void forge_log_secret_remove(const char *secret)
{
    ptrdiff_t slot;
    size_t last;

    if (!secret)
        return;
    pthread_mutex_lock(&lock);
    slot = find_secret(secret, secret_hash(secret));
    if (slot >= 0 && --logger.secrets[slot].refs == 0) {
        /* out of its chains; the last slot moves into its place */
        *link_to((size_t)slot) = logger.secrets[slot].next;
        *wlink_to((size_t)slot) = logger.secrets[slot].wnext;
        logger.wlens[logger.secrets[slot].wlen]--;
        wipe_free(logger.secrets[slot].text);
        last = --logger.nsecrets;
        if ((size_t)slot != last) {
            *link_to(last) = (size_t)slot + 1;
            *wlink_to(last) = (size_t)slot + 1;
            logger.secrets[slot] = logger.secrets[last];
        }
    }
    pthread_mutex_unlock(&lock);
}

char **forge_log_secrets_copy(size_t *count)
{
    char **copy;
    size_t n;

    pthread_mutex_lock(&lock);
    n = logger.nsecrets;
    copy = forge_xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        copy[i] = forge_xstrdup(logger.secrets[i].text);
    pthread_mutex_unlock(&lock);
    if (count)
        *count = n;
    return copy;
}

void forge_log_secrets_free(char **secrets)
{
    for (size_t i = 0; secrets && secrets[i]; i++)
        wipe_free(secrets[i]);
    free(secrets);
}

bool forge_log_enabled(forge_log_level_t level)
{
    bool on;

    pthread_mutex_lock(&lock);
    on = level >= logger.level;
    pthread_mutex_unlock(&lock);
    return on;
}

void forge_log_fields(forge_log_level_t level, const forge_log_field_t *fields,
                      size_t nfields, const char *fmt, ...)
{
    forge_buf_t msg = FORGE_BUF_INIT, line = FORGE_BUF_INIT;
    va_list ap;

    if (!forge_log_enabled(level))
        return;
    va_start(ap, fmt);
    forge_buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&lock);
    build_line(&line, level, forge_buf_str(&msg), fields, nfields);
    /* a failure: nowhere left to report it */
    (void)forge_write_all(logger.fd, line.data, line.len);
    pthread_mutex_unlock(&lock);
    forge_buf_clear(&msg);
    forge_buf_clear(&line);
}

char *forge_log_redact(const char *text)
{
    forge_buf_t out = FORGE_BUF_INIT;

    pthread_mutex_lock(&lock);
    redact_into(&out, text ? text : "", text ? strlen(text) : 0);
    pthread_mutex_unlock(&lock);
    return forge_buf_take(&out);
}

void forge_log_reset(void)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < logger.nsecrets; i++)
        wipe_free(logger.secrets[i].text);
    free(logger.secrets);
    free(logger.heads);
    free(logger.wheads);
    free(logger.worker_id);
    logger.secrets = NULL;
    logger.heads = logger.wheads = NULL;
    logger.nsecrets = logger.capacity = logger.nheads = 0;
    memset(logger.wlens, 0, sizeof(logger.wlens));
    logger.worker_id = NULL;
    logger.level = FORGE_LOG_INFO;
    logger.format = FORGE_LOG_JSON;
    logger.fd = 2;
    pthread_mutex_unlock(&lock);
}
