/* SPDX-License-Identifier: Apache-2.0 */
/*
 * text.h - the checks on text that configuration, requests and catalogues
 * share: control characters, names (one regex shape), http(s) URLs. Pure,
 * ASCII, no locale: the same string always gets the same answer wherever
 * it is checked.
 */
#ifndef FORGE_TEXT_H
#define FORGE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* True when s holds a control character: below U+0020, or DEL. */
bool forge_text_has_control(const char *s);

/* True when s matches ^[A-Za-z0-9][A-Za-z0-9<extra>]{0,max-1}$: a letter
 * or digit, then letters, digits and the characters of extra. */
bool forge_text_is_name(const char *s, const char *extra, size_t max);

/* forge_text_is_http_url flags. */
enum {
    /* A base other paths are appended to: a host right after the scheme
     * (not '/' or ':'), no query ('?') and no fragment ('#'). */
    FORGE_URL_BASE = 1 << 0,
};

/* True when s is "http://" or "https://" followed by at least one
 * character and no white space, and meets flags. */
bool forge_text_is_http_url(const char *s, unsigned flags);

#endif
