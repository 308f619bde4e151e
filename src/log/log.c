/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.c - the process-wide logger of log.h: formatting, redaction, output.
 *
 * Threads: every public function takes `lock`, which guards the
 * configuration; a line is built and written under it, so lines never
 * interleave. The secrets a line must not show are the registry's
 * (secrets.h), searched once per line under its own lock (taken inside
 * this one, never the other way round), so a secret removed by one thread
 * is never half redacted in another's line.
 */
#include "log/log.h"
#include "base/buf.h"
#include "secrets/secrets.h"
#include "clock/timestamp.h"
#include "text/utf8.h"
#include "base/util.h"

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

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    forge_log_level_t level;
    forge_log_format_t format;
    int fd;
    char *worker_id;
} logger = {FORGE_LOG_INFO, FORGE_LOG_JSON, 2, NULL};

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

/* Appends s[0..n) to out with every registered secret and JWT-shaped run
 * replaced (redact.h). */
static void redact_into(forge_buf_t *out, const char *s, size_t n)
{
    forge_redact_runs_t runs = {NULL, 0};

    forge_secrets_find(&runs, s, n);
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
    char stamp[FORGE_TIMESTAMP_MAX];

    forge_timestamp_format(forge_timestamp_now_ms(), stamp, sizeof(stamp));
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
    free(logger.worker_id);
    logger.worker_id = NULL;
    logger.level = FORGE_LOG_INFO;
    logger.format = FORGE_LOG_JSON;
    logger.fd = 2;
    pthread_mutex_unlock(&lock);
    forge_secrets_reset();
}
