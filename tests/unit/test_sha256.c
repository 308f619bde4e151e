/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_sha256.c - SHA-256 as hex (sha256.h), in one call and over pieces,
 * against the FIPS 180-2 test vectors.
 */
#include "text/sha256.h"

#include <criterion/criterion.h>
#include <string.h>

#define ABC_HEX                                                                \
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define EMPTY_HEX                                                              \
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define TWO_BLOCKS "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
#define TWO_BLOCKS_HEX                                                         \
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"

Test(sha256, one_call)
{
    char hex[FORGE_SHA256_HEX];

    forge_sha256_hex("abc", 3, hex);
    cr_assert_str_eq(hex, ABC_HEX);
    forge_sha256_hex("", 0, hex);
    cr_assert_str_eq(hex, EMPTY_HEX);
    forge_sha256_hex(TWO_BLOCKS, strlen(TWO_BLOCKS), hex);
    cr_assert_str_eq(hex, TWO_BLOCKS_HEX);
}

Test(sha256, pieces_give_the_digest_of_the_whole)
{
    forge_sha256_t *h = forge_sha256_new();
    char hex[FORGE_SHA256_HEX];

    for (const char *p = TWO_BLOCKS; *p; p += 7)
        forge_sha256_update(h, p, strnlen(p, 7));
    forge_sha256_final_hex(h, hex);
    cr_assert_str_eq(hex, TWO_BLOCKS_HEX);
    forge_sha256_destroy(h);
}

Test(sha256, restart_forgets_what_came_before)
{
    forge_sha256_t *h = forge_sha256_new();
    char hex[FORGE_SHA256_HEX];

    forge_sha256_update(h, "not this", 8);
    forge_sha256_restart(h);
    forge_sha256_update(h, "ab", 2);
    forge_sha256_update(h, "c", 1);
    forge_sha256_final_hex(h, hex);
    cr_assert_str_eq(hex, ABC_HEX);
    forge_sha256_destroy(h);
    forge_sha256_destroy(NULL);
}
