/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seal.c - AES-256-GCM sealing with the state keys (seal.h): the key files
 * and their checks, the key ids, seal and open, and the strict base64 the
 * sealed values are written in. OpenSSL EVP does the cryptography; nothing
 * here keeps state beyond the loaded keys and one cipher context per
 * thread (gcm: keyed afresh at each use).
 */
#include "record/seal.h"
#include "text/sha256.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IV_BYTES  12
#define TAG_BYTES 16
#define IV_B64    16 /* IV_BYTES in base64 */

#define VAR_CURRENT  "FORGE_STATE_KEY_FILE"
#define VAR_PREVIOUS "FORGE_STATE_KEY_FILE_PREVIOUS"

typedef struct seal_key {
    bool set;
    unsigned char bytes[FORGE_SEAL_KEY_BYTES];
    char kid[FORGE_SEAL_KID_HEX];
} seal_key_t;

struct forge_sealer {
    seal_key_t current;
    seal_key_t previous; /* set: opens only */
};

/* ---- keys ------------------------------------------------------------- */

static void key_id(const unsigned char *key, char kid[FORGE_SEAL_KID_HEX])
{
    char hex[FORGE_SHA256_HEX];

    forge_sha256_hex(key, FORGE_SEAL_KEY_BYTES, hex);
    memcpy(kid, hex, FORGE_SEAL_KID_HEX - 1);
    kid[FORGE_SEAL_KID_HEX - 1] = '\0';
    OPENSSL_cleanse(hex, sizeof(hex));
}

/* Exactly FORGE_SEAL_KEY_BYTES from fd, and then the end of the file. */
static bool read_exact(int fd, unsigned char *key)
{
    size_t got = 0;
    unsigned char extra;
    ssize_t n;

    while (got < FORGE_SEAL_KEY_BYTES) {
        n = read(fd, key + got, FORGE_SEAL_KEY_BYTES - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        got += (size_t)n;
    }
    while ((n = read(fd, &extra, 1)) < 0 && errno == EINTR)
        ;
    return n == 0;
}

/* The checks of seal.h on an open key file (fstat: what was opened). */
static forge_rc_t check_key_file(int fd, const char *var, const char *path,
                                 forge_error_t *err)
{
    struct stat st;

    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return forge_error_set(err, FORGE_ECONFIG, var,
                               "%s %s is not a regular file", var, path);
    if (st.st_mode & 077)
        return forge_error_set(err, FORGE_ECONFIG, var,
                               "%s %s is open to group or others (mode "
                               "%03o): chmod 600 it",
                               var, path, (unsigned)(st.st_mode & 0777));
    if (st.st_size != FORGE_SEAL_KEY_BYTES)
        return forge_error_set(err, FORGE_ECONFIG, var,
                               "%s %s must hold exactly %d raw bytes (it has "
                               "%lld): make one with head -c %d /dev/urandom",
                               var, path, FORGE_SEAL_KEY_BYTES,
                               (long long)st.st_size, FORGE_SEAL_KEY_BYTES);
    return FORGE_OK;
}

static forge_rc_t load_key(const char *path, const char *var, seal_key_t *key,
                           forge_error_t *err)
{
    /* O_NONBLOCK: a FIFO named here must not hang the start. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    forge_rc_t rc;

    if (fd < 0)
        return forge_error_set(err, FORGE_ECONFIG, var,
                               "%s %s cannot be opened: %s", var, path,
                               strerror(errno));
    rc = check_key_file(fd, var, path, err);
    if (!rc && !read_exact(fd, key->bytes))
        rc = forge_error_set(err, FORGE_ECONFIG, var,
                             "%s %s could not be read whole", var, path);
    close(fd);
    if (rc) {
        OPENSSL_cleanse(key->bytes, sizeof(key->bytes));
        return rc;
    }
    key_id(key->bytes, key->kid);
    key->set = true;
    return FORGE_OK;
}

forge_rc_t forge_sealer_load(const char *key_file, const char *previous_file,
                             forge_sealer_t **out, forge_error_t *err)
{
    forge_sealer_t *s = forge_xcalloc(1, sizeof(*s));
    forge_rc_t rc;

    *out = NULL;
    if (!key_file)
        rc = forge_error_set(err, FORGE_ECONFIG, VAR_CURRENT, "%s is required",
                             VAR_CURRENT);
    else if (!(rc = load_key(key_file, VAR_CURRENT, &s->current, err)) &&
             previous_file)
        rc = load_key(previous_file, VAR_PREVIOUS, &s->previous, err);
    if (rc) {
        forge_sealer_destroy(s);
        return rc;
    }
    *out = s;
    return FORGE_OK;
}

forge_rc_t forge_sealer_from_config(const forge_config_t *cfg,
                                    forge_sealer_t **out, forge_error_t *err)
{
    return forge_sealer_load(cfg->state_key_file, cfg->state_key_file_previous,
                             out, err);
}

void forge_sealer_destroy(forge_sealer_t *s)
{
    if (!s)
        return;
    OPENSSL_cleanse(s, sizeof(*s));
    free(s);
}

const char *forge_sealer_kid(const forge_sealer_t *s)
{
    return s->current.kid;
}

static const seal_key_t *key_of(const forge_sealer_t *s, const char *kid)
{
    const seal_key_t *keys[] = {s ? &s->current : NULL,
                                s ? &s->previous : NULL};

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (keys[i] && keys[i]->set && !strcmp(keys[i]->kid, kid))
            return keys[i];
    return NULL;
}

/* ---- base64 (standard alphabet, padded, nothing else allowed) ---------- */

static char *b64_encode(const unsigned char *in, size_t n)
{
    char *out = forge_xmalloc(4 * ((n + 2) / 3) + 1);

    EVP_EncodeBlock((unsigned char *)out, in, (int)n);
    return out;
}

/* The value of each base64 character, 64 for any other byte. */
static unsigned char b64_values[256];

static void b64_table(void)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    memset(b64_values, 64, sizeof(b64_values));
    for (int i = 0; i < 64; i++)
        b64_values[(unsigned char)alphabet[i]] = (unsigned char)i;
}

/* The bytes text[0..len) decodes to at most (room for a NUL after). */
static size_t b64_room(size_t len)
{
    return len / 4 * 3 + 1;
}

/* text[0..len) decoded into o (b64_room(len) bytes), *n bytes; false when
 * it is not strict base64 (the standard alphabet, padded, nothing else). A
 * table, one pass: a restore opens a request per record. */
static bool b64_decode_into(const char *text, size_t len, unsigned char *o,
                            size_t *n)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    const unsigned char *in = (const unsigned char *)text;
    size_t pad = 0, got = 0;

    pthread_once(&once, b64_table);
    if (len == 0 || len % 4 != 0 || len > INT_MAX)
        return false;
    while (pad < 2 && text[len - 1 - pad] == '=')
        pad++;
    /* every quad but the last: no padding; a byte outside the alphabet
     * (64 in the table) shows in the four values' OR */
    for (; got / 3 * 4 + 4 < len; in += 4) {
        unsigned a = b64_values[in[0]], b = b64_values[in[1]],
                 c = b64_values[in[2]], d = b64_values[in[3]];
        if ((a | b | c | d) & 64)
            return false;
        o[got++] = (unsigned char)(a << 2 | b >> 4);
        o[got++] = (unsigned char)((b & 15) << 4 | c >> 2);
        o[got++] = (unsigned char)((c & 3) << 6 | d);
    }
    for (size_t i = got / 3 * 4; i < len; i += 4) { /* the last quad */
        unsigned v[4];
        for (int k = 0; k < 4; k++) {
            bool padding = i + (size_t)k >= len - pad;
            v[k] = padding ? 0 : b64_values[in[k]];
            if (v[k] == 64)
                return false;
        }
        o[got++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
        o[got++] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
        o[got++] = (unsigned char)((v[2] & 3) << 6 | v[3]);
    }
    *n = got - pad;
    return true;
}

/* ---- seal and open ---------------------------------------------------- */

/* One AES-256-GCM context per thread and direction, made once: a restore
 * opens a sealed request per record, and a context made, given its
 * cipher (OpenSSL 3 fetches it from a provider each time) and freed per
 * record was most of the cryptography's cost. Each use sets the IV afresh
 * (which starts GCM over: nothing of one record's carries to the next),
 * and the key only when it is not the one the context has already (its
 * schedule and GHASH table made once, not per record: half of the
 * remaining cost); a copy of that key is kept to compare, wiped with the
 * context. Freed when the thread ends (a thread-specific key's
 * destructor). */
static pthread_key_t ctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;

typedef struct gcm_ctxs {
    EVP_CIPHER_CTX *ctx[2]; /* [enc] */
    bool keyed[2];          /* ctx[enc] has key[enc] set */
    unsigned char key[2][FORGE_SEAL_KEY_BYTES];
} gcm_ctxs_t;

static void ctxs_free(void *p)
{
    gcm_ctxs_t *c = p;

    OPENSSL_cleanse(c->key, sizeof(c->key));
    EVP_CIPHER_CTX_free(c->ctx[0]);
    EVP_CIPHER_CTX_free(c->ctx[1]);
    free(c);
}

static void ctx_key_make(void)
{
    (void)pthread_key_create(&ctx_key, ctxs_free);
}

/* This thread's contexts, ctx[enc] made and its cipher set; NULL when
 * OpenSSL cannot make it. */
static gcm_ctxs_t *thread_ctxs(int enc)
{
    gcm_ctxs_t *c;

    pthread_once(&ctx_once, ctx_key_make);
    if (!(c = pthread_getspecific(ctx_key))) {
        c = forge_xcalloc(1, sizeof(*c));
        if (pthread_setspecific(ctx_key, c) != 0) {
            free(c);
            return NULL;
        }
    }
    if (!c->ctx[enc] && (c->ctx[enc] = EVP_CIPHER_CTX_new()) &&
        !(EVP_CipherInit_ex(c->ctx[enc], EVP_aes_256_gcm(), NULL, NULL, NULL,
                            enc) &&
          EVP_CIPHER_CTX_ctrl(c->ctx[enc], EVP_CTRL_GCM_SET_IVLEN, IV_BYTES,
                              NULL))) {
        EVP_CIPHER_CTX_free(c->ctx[enc]);
        c->ctx[enc] = NULL;
    }
    return c->ctx[enc] ? c : NULL;
}

/* ctx[enc] of c given key (unless it has it already) and iv. */
static bool gcm_init(gcm_ctxs_t *c, const seal_key_t *key,
                     const unsigned char *iv, int enc)
{
    bool same = c->keyed[enc] &&
                !CRYPTO_memcmp(c->key[enc], key->bytes, sizeof(key->bytes));

    c->keyed[enc] = false; /* until this init is through */
    if (!EVP_CipherInit_ex(c->ctx[enc], NULL, NULL, same ? NULL : key->bytes,
                           iv, enc))
        return false;
    memcpy(c->key[enc], key->bytes, sizeof(key->bytes));
    c->keyed[enc] = true;
    return true;
}

/* AES-256-GCM of in[0..len) into out (len bytes) with key, iv and aad,
 * one way or the other: sealing (enc) writes the tag (TAG_BYTES) to tag;
 * opening checks the tag read from tag, false when it does not
 * authenticate. */
static bool gcm(const seal_key_t *key, const unsigned char *iv, const char *aad,
                const unsigned char *in, size_t len, unsigned char *out,
                unsigned char *tag, int enc)
{
    gcm_ctxs_t *c = thread_ctxs(enc);
    EVP_CIPHER_CTX *ctx = c ? c->ctx[enc] : NULL;
    int n = 0, fin = 0;

    return ctx && gcm_init(c, key, iv, enc) &&
           EVP_CipherUpdate(ctx, NULL, &n, (const unsigned char *)aad,
                            (int)strlen(aad)) &&
           EVP_CipherUpdate(ctx, out, &n, in, (int)len) &&
           (enc ||
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG_BYTES, tag)) &&
           EVP_CipherFinal_ex(ctx, out + n, &fin) > 0 &&
           (!enc ||
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG_BYTES, tag));
}

forge_rc_t forge_seal(const forge_sealer_t *s, const char *aad, const void *pt,
                      size_t len, json_t **out, forge_error_t *err)
{
    unsigned char iv[IV_BYTES];
    unsigned char *ct;
    char *iv64, *ct64;

    *out = NULL;
    if (!s || !s->current.set || !aad || len > INT_MAX - TAG_BYTES)
        return forge_error_set(err, FORGE_EINVAL, NULL,
                               "nothing to seal with, or too much to seal");
    if (RAND_bytes(iv, sizeof(iv)) != 1)
        return forge_error_set(err, FORGE_EIO, NULL,
                               "no random IV to seal with");
    ct = forge_xmalloc(len + TAG_BYTES);
    if (!gcm(&s->current, iv, aad, pt, len, ct, ct + len, 1)) {
        free(ct);
        return forge_error_set(err, FORGE_EIO, NULL, "AES-256-GCM failed");
    }
    iv64 = b64_encode(iv, sizeof(iv));
    ct64 = b64_encode(ct, len + TAG_BYTES);
    *out = json_pack("{s:s, s:s, s:s}", "kid", s->current.kid, "iv", iv64, "ct",
                     ct64);
    free(iv64);
    free(ct64);
    free(ct);
    return FORGE_OK;
}

/* A key id: exactly FORGE_SEAL_KID_HEX - 1 lowercase hex digits, copied
 * into kid (NUL-terminated). */
static bool is_kid(const char *text, size_t len, char kid[FORGE_SEAL_KID_HEX])
{
    if (len != FORGE_SEAL_KID_HEX - 1)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!strchr("0123456789abcdef", text[i]) || !text[i])
            return false;
    memcpy(kid, text, len);
    kid[len] = '\0';
    return true;
}

forge_rc_t forge_unseal(const forge_sealer_t *s, const char *aad,
                        const json_t *sealed, char **out, size_t *out_len,
                        forge_error_t *err)
{
    forge_sealed_parts_t v = {0};

    *out = NULL;
    *out_len = 0;
    if (json_unpack((json_t *)sealed, "{s:s, s:s, s:s}", "kid", &v.kid, "iv",
                    &v.iv, "ct", &v.ct) != 0)
        return forge_error_set(err, FORGE_ESCHEMA, "$.request_sealed",
                               "the sealed value is malformed");
    v.kid_len = strlen(v.kid);
    v.iv_len = strlen(v.iv);
    v.ct_len = strlen(v.ct);
    return forge_unseal_parts(s, aad, &v, out, out_len, err);
}

forge_rc_t forge_unseal_parts(const forge_sealer_t *s, const char *aad,
                              const forge_sealed_parts_t *v, char **out,
                              size_t *out_len, forge_error_t *err)
{
    /* the IV on the stack, the ciphertext decoded into what becomes the
     * plaintext (opened in place): one allocation per value opened */
    unsigned char iv[IV_B64 / 4 * 3 + 1];
    unsigned char *ct = NULL;
    size_t iv_len = 0, ct_len = 0;
    char kid[FORGE_SEAL_KID_HEX];
    const seal_key_t *key;
    forge_rc_t rc = FORGE_OK;

    *out = NULL;
    *out_len = 0;
    if (v->ct_len <= INT_MAX)
        ct = forge_xmalloc(b64_room(v->ct_len));
    if (!is_kid(v->kid, v->kid_len, kid) || v->iv_len != IV_B64 ||
        !b64_decode_into(v->iv, v->iv_len, iv, &iv_len) || iv_len != IV_BYTES ||
        !ct || !b64_decode_into(v->ct, v->ct_len, ct, &ct_len) ||
        ct_len < TAG_BYTES) {
        rc = forge_error_set(err, FORGE_ESCHEMA, "$.request_sealed",
                             "the sealed value is malformed");
    } else if (!(key = key_of(s, kid))) {
        rc = forge_error_set(err, FORGE_ECONFIG, VAR_PREVIOUS,
                             "sealed with key %s, which is neither %s nor %s",
                             kid, VAR_CURRENT, VAR_PREVIOUS);
    } else if (!gcm(key, iv, aad ? aad : "", ct, ct_len - TAG_BYTES, ct,
                    ct + ct_len - TAG_BYTES, 0)) {
        rc = forge_error_set(err, FORGE_ESCHEMA, "$.request_sealed",
                             "the value sealed with key %s does not "
                             "authenticate (tampered, or sealed for "
                             "another record)",
                             kid);
    }
    if (rc) {
        if (ct)
            OPENSSL_cleanse(ct, ct_len);
        free(ct);
        return rc;
    }
    ct[ct_len - TAG_BYTES] = '\0'; /* over the tag, read already */
    *out = (char *)ct;
    *out_len = ct_len - TAG_BYTES;
    return FORGE_OK;
}
