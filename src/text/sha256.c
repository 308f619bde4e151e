/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sha256.c - SHA-256 as hex over OpenSSL's EVP (sha256.h).
 */
#include "text/sha256.h"
#include "base/util.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>

struct forge_sha256 {
    EVP_MD_CTX *ctx;
};

static void to_hex(const unsigned char *bytes, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 0xf];
    }
    out[2 * n] = '\0';
}

/* The digest md (of n bytes: 32 for SHA-256) as hex; md wiped. */
static void md_to_hex(unsigned char *md, unsigned int n,
                      char out[FORGE_SHA256_HEX])
{
    to_hex(md, n < 32 ? n : 32, out);
    OPENSSL_cleanse(md, n);
}

void forge_sha256_hex(const void *bytes, size_t len, char out[FORGE_SHA256_HEX])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;

    EVP_Digest(bytes, len, md, &n, EVP_sha256(), NULL);
    md_to_hex(md, n, out);
}

forge_sha256_t *forge_sha256_new(void)
{
    forge_sha256_t *h = forge_xcalloc(1, sizeof(*h));

    if (!(h->ctx = EVP_MD_CTX_new())) {
        fprintf(stderr, "forge-worker: out of memory (EVP_MD_CTX_new)\n");
        abort();
    }
    forge_sha256_restart(h);
    return h;
}

void forge_sha256_restart(forge_sha256_t *h)
{
    EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL);
}

void forge_sha256_update(forge_sha256_t *h, const void *bytes, size_t len)
{
    EVP_DigestUpdate(h->ctx, bytes, len);
}

void forge_sha256_final_hex(forge_sha256_t *h, char out[FORGE_SHA256_HEX])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;

    EVP_DigestFinal_ex(h->ctx, md, &n);
    md_to_hex(md, n, out);
}

void forge_sha256_destroy(forge_sha256_t *h)
{
    if (!h)
        return;
    EVP_MD_CTX_free(h->ctx);
    free(h);
}
