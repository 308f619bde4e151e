/* SPDX-License-Identifier: Apache-2.0 */
/*
 * utf8.h - UTF-8, once: what a valid sequence is (strict, as jansson is),
 * how many characters a valid string holds, and where the next character
 * starts. Every place that cleans, counts or cuts text uses these.
 */
#ifndef FORGE_UTF8_H
#define FORGE_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at p (left bytes available), or 0
 * when it is not one: strict, as jansson is (no overlong forms, no
 * surrogates, nothing past U+10FFFF). */
size_t forge_utf8_len(const unsigned char *p, size_t left);

/* Characters (code points) in s[0..n), valid UTF-8. */
size_t forge_utf8_count(const char *s, size_t n);

/* The first index >= at of s[0..len) that is not inside a character
 * (not a continuation byte), or len: where a cut of valid UTF-8 may go. */
size_t forge_utf8_boundary(const unsigned char *s, size_t len, size_t at);

#endif
