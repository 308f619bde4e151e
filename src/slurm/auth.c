/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/auth.c - token file watching and HS256 minting (auth.h).
 */
#include "slurm/auth.h"
#include "hooks/hooks.h"
#include "log/log.h"
#include "secrets/secrets.h"
#include "base/util.h"

#include <jansson.h>
#include <jwt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define TOKEN_MAX_BYTES 16384
#define KEY_MAX_BYTES   4096

struct forge_slurm_auth {
    char *user;
    char *token_file; /* or ... */
    char *key_file;   /* ... this */
    int lifetime_s;
    int min_validity_s; /* what a token handed out still has to live */
    unsigned char *key;
    size_t key_len;
    char *token;        /* current token, registered for redaction */
    time_t expires;     /* minted: when to mint again */
    struct stat seen;   /* token file: the version `token` came from */
    bool reread_failed; /* token file: warned that a re-read failed */
};

/* Refuses a secret file that group or others may read. */
static forge_rc_t check_private(const char *path, const char *what,
                                struct stat *st, forge_error_t *err)
{
    if (stat(path, st) != 0)
        return forge_error_set(err, FORGE_ECONFIG, what, "%s %s cannot be read",
                               what, path);
    if (st->st_mode & (S_IRWXG | S_IRWXO))
        return forge_error_set(err, FORGE_ECONFIG, what,
                               "%s %s is readable by group or others (mode "
                               "%03o): chmod 600 it",
                               what, path, (unsigned)(st->st_mode & 0777));
    return FORGE_OK;
}

/* The secret file at path (the "token file", the "key file": what) of
 * variable var: private (check_private), then read whole, min to max bytes,
 * into *buf (new). FORGE_ECONFIG, err set, otherwise. */
static forge_rc_t read_private(const char *path, const char *var,
                               const char *what, size_t min, size_t max,
                               struct stat *st, char **buf, size_t *len,
                               forge_error_t *err)
{
    forge_rc_t rc;

    *buf = NULL;
    *len = 0;
    if ((rc = check_private(path, var, st, err)))
        return rc;
    if (!forge_read_file(path, max, buf, len) && *len >= min)
        return FORGE_OK;
    free(*buf);
    *buf = NULL;
    if (!min)
        return forge_error_set(err, FORGE_ECONFIG, var, "cannot read the %s %s",
                               what, path);
    return forge_error_set(err, FORGE_ECONFIG, var,
                           "the %s %s must hold %zu to %zu bytes", what, path,
                           min, max);
}

/* base64url (no padding) of n chars into out (at most 3n/4 bytes); the
 * length decoded, or -1 on a character outside the alphabet. */
static long base64url_decode(const char *in, size_t n, unsigned char *out)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned long acc = 0;
    int bits = 0;
    long len = 0;

    for (size_t i = 0; i < n; i++) {
        const char *c = in[i] ? strchr(alphabet, in[i]) : NULL;
        if (in[i] == '=')
            break;
        if (!c)
            return -1;
        acc = (acc << 6) | (unsigned long)(c - alphabet);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[len++] = (unsigned char)((acc >> bits) & 0xff);
        }
    }
    return len;
}

long long forge_slurm_jwt_expiry(const char *token)
{
    const char *dot = token ? strchr(token, '.') : NULL;
    const char *end = dot ? strchr(dot + 1, '.') : NULL;
    unsigned char *payload;
    json_t *claims, *exp;
    long long exp_s = 0;
    long n;

    if (!end || end - dot > 8192)
        return 0; /* no JWT (a test's opaque token) */
    payload = forge_xmalloc((size_t)(end - dot));
    n = base64url_decode(dot + 1, (size_t)(end - dot - 1), payload);
    claims =
        n > 0 ? json_loadb((const char *)payload, (size_t)n, 0, NULL) : NULL;
    exp = json_object_get(claims, "exp");
    if (json_is_integer(exp))
        exp_s = (long long)json_integer_value(exp);
    json_decref(claims);
    free(payload);
    return exp_s;
}

static void set_token(forge_slurm_auth_t *a, char *token)
{
    if (a->token)
        forge_secret_remove(a->token);
    free(a->token);
    a->token = token;
    if (token)
        (void)forge_secret_add(token); /* short strings are no JWT */
    /* its expiry, a metric */
    forge_hooks()->jwt(forge_slurm_jwt_expiry(token), a->key_file != NULL);
}

static forge_rc_t read_token(forge_slurm_auth_t *a, forge_error_t *err)
{
    struct stat st;
    char *buf;
    size_t len;
    forge_rc_t rc =
        read_private(a->token_file, "FORGE_SLURM_JWT_FILE", "token file", 0,
                     TOKEN_MAX_BYTES, &st, &buf, &len, err);

    if (rc)
        return rc;
    while (len > 0 && strchr("\r\n \t", buf[len - 1]))
        buf[--len] = '\0';
    if (!strncmp(buf, "SLURM_JWT=", 10)) /* scontrol token's own format */
        memmove(buf, buf + 10, len - 9);
    if (!*buf) {
        free(buf);
        return forge_error_set(err, FORGE_ECONFIG, "FORGE_SLURM_JWT_FILE",
                               "the token file %s is empty", a->token_file);
    }
    set_token(a, buf);
    a->seen = st;
    return FORGE_OK;
}

static bool token_file_changed(const forge_slurm_auth_t *a)
{
    struct stat st;

    if (stat(a->token_file, &st) != 0)
        return true; /* being replaced: try again */
    return st.st_ino != a->seen.st_ino || st.st_size != a->seen.st_size ||
           st.st_mtim.tv_sec != a->seen.st_mtim.tv_sec ||
           st.st_mtim.tv_nsec != a->seen.st_mtim.tv_nsec;
}

static forge_rc_t mint(forge_slurm_auth_t *a, forge_error_t *err)
{
    time_t now = time(NULL);
    int margin = a->lifetime_s / 5;
    jwt_t *jwt = NULL;
    char *encoded = NULL;
    forge_rc_t rc = FORGE_ECONFIG;

    if (jwt_new(&jwt) != 0 ||
        jwt_set_alg(jwt, JWT_ALG_HS256, a->key, (int)a->key_len) != 0 ||
        jwt_add_grant(jwt, "sun", a->user) != 0 ||
        jwt_add_grant_int(jwt, "iat", (long)now) != 0 ||
        jwt_add_grant_int(jwt, "exp", (long)now + a->lifetime_s) != 0 ||
        !(encoded = jwt_encode_str(jwt))) {
        forge_error_set(err, FORGE_ECONFIG, "FORGE_SLURM_JWT_KEY_FILE",
                        "cannot mint an HS256 token with %s", a->key_file);
        goto out;
    }
    set_token(a, forge_xstrdup(encoded));
    /* Mint again when a fifth of the lifetime is left, and no later than
     * when just min_validity_s is. */
    if (margin < a->min_validity_s)
        margin = a->min_validity_s;
    a->expires = now + a->lifetime_s - margin;
    rc = FORGE_OK;
out:
    free(encoded);
    jwt_free(jwt);
    return rc;
}

static forge_rc_t load_key(forge_slurm_auth_t *a, forge_error_t *err)
{
    struct stat st;
    char *buf;

    if (read_private(a->key_file, "FORGE_SLURM_JWT_KEY_FILE", "key file", 16,
                     KEY_MAX_BYTES, &st, &buf, &a->key_len, err))
        return FORGE_ECONFIG;
    a->key = (unsigned char *)buf;
    return FORGE_OK;
}

forge_rc_t forge_slurm_auth_new(const char *user, const char *token_file,
                                const char *key_file, int lifetime_s,
                                int min_validity_s, forge_slurm_auth_t **out,
                                forge_error_t *err)
{
    forge_slurm_auth_t *a = forge_xcalloc(1, sizeof(*a));
    forge_rc_t rc;

    *out = NULL;
    a->user = forge_xstrdup(user);
    a->token_file = forge_xstrdup(token_file);
    a->key_file = forge_xstrdup(key_file);
    /* slurmctld checks exp when it handles the call, which may be as late
     * as the call's timeout: every token handed out keeps min_validity_s
     * to live, so a minted one lives at least a second longer (a second of
     * use; exp counts whole seconds). */
    a->min_validity_s = min_validity_s > 1 ? min_validity_s : 1;
    a->lifetime_s =
        lifetime_s > a->min_validity_s ? lifetime_s : a->min_validity_s + 1;
    if (!!token_file == !!key_file)
        rc = forge_error_set(err, FORGE_ECONFIG, "FORGE_SLURM_JWT_FILE",
                             "set FORGE_SLURM_JWT_FILE or "
                             "FORGE_SLURM_JWT_KEY_FILE (one of them)");
    else if (token_file)
        rc = read_token(a, err);
    else if (!(rc = load_key(a, err)))
        rc = mint(a, err);
    if (rc) {
        forge_slurm_auth_destroy(a);
        return rc;
    }
    *out = a;
    return FORGE_OK;
}

/*
 * A token file that changed but cannot be read now - caught mid-rotation
 * (`scontrol token > file` truncates it first), or briefly of a wrong mode -
 * leaves the current token in use until the file settles: nothing says
 * that token is stale yet. A forced re-read (slurmrestd refused the token)
 * that fails fails.
 */
static forge_rc_t reread_token(forge_slurm_auth_t *a, bool force,
                               forge_error_t *err)
{
    forge_error_t now = {0};

    if (read_token(a, &now) == FORGE_OK) {
        a->reread_failed = false;
        return FORGE_OK;
    }
    if (force)
        return forge_error_set(err, now.code, now.field, "%s", now.message);
    if (!a->reread_failed)
        forge_log_warn("%s; the token read before stays in use", now.message);
    a->reread_failed = true;
    return FORGE_OK;
}

const char *forge_slurm_auth_token(forge_slurm_auth_t *a, bool force,
                                   forge_error_t *err)
{
    forge_rc_t rc = FORGE_OK;

    /* wall time, not clock/clock.h's: slurmrestd checks exp on its own
     * wall clock */
    if (a->token_file && (force || token_file_changed(a)))
        rc = reread_token(a, force, err);
    else if (a->key_file && (force || time(NULL) >= a->expires))
        rc = mint(a, err);
    return rc ? NULL : a->token;
}

void forge_slurm_auth_destroy(forge_slurm_auth_t *a)
{
    if (!a)
        return;
    set_token(a, NULL);
    if (a->key) {
        memset(a->key, 0, a->key_len);
        free(a->key);
    }
    free(a->user);
    free(a->token_file);
    free(a->key_file);
    free(a);
}
