/* SPDX-License-Identifier: Apache-2.0 */
/*
 * secrets.c - the registry of secrets.h: an array of counted copies with
 * four hash indexes over it, each chained through the slots (slot numbers
 * + 1; 0 ends a chain), all with `nheads` heads (0 or a power of two):
 *   BY_TEXT    the whole text: what add and remove look up;
 *   BY_WINDOW  the first min(len, WINDOW_MAX) bytes: what a search looks
 *              up at each position of a text, for each window length some
 *              secret has (wlens);
 *   BY_HEAD    the first PART_LEN bytes, BY_TAIL the last PART_LEN: the
 *              cuts at a window's edges (only secrets longer than
 *              PART_LEN, the others cannot be cut into a long enough part).
 * The chains are linked both ways, so a slot leaves its chains at once
 * however long they are (100,000 tokens sharing their first five bytes
 * share a BY_HEAD chain). Removing a slot moves the last one into its
 * place, so the array stays dense. Threads: every public function takes `lock`
 * once (secrets.h), forge_secrets_add_many once for all it adds.
 */
#include "secrets/secrets.h"
#include "base/util.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW_MAX 32
#define PART_LEN   (FORGE_SECRET_PART_MIN + 1) /* a cut's shortest part */

enum { BY_TEXT, BY_WINDOW, BY_HEAD, BY_TAIL, INDEX_COUNT };

typedef struct secret {
    char *text;
    uint32_t len;
    uint32_t refs; /* holders that added it and did not remove it yet */
    uint32_t wlen; /* its window length */
    uint32_t hash[INDEX_COUNT];
    uint32_t next[INDEX_COUNT]; /* slot numbers + 1 */
    uint32_t prev[INDEX_COUNT]; /* 0: the chain's head */
} secret_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    secret_t *slots;
    size_t count, capacity;
    uint32_t *heads[INDEX_COUNT];
    size_t nheads;
    size_t wlens[WINDOW_MAX + 1]; /* secrets by window length */
    size_t longest;               /* never shrinks but at a reset */
} reg;

static uint32_t hash_bytes(const char *s, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a, then the length mixed in */

    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h ^ (uint32_t)len * 0x9e3779b1u;
}

/* The window index's hash: a polynomial one, so a search rolls it from
 * one position of a text to the next in two steps instead of hashing
 * each window anew (a 64 KiB live logs chunk against 32-byte tokens: 30
 * times fewer steps), mixed before it picks a chain (the polynomial's low
 * bits alone spread badly). */
#define ROLL_BASE 0x01000193u

static uint32_t roll_mix(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    return h ^ (h >> 13);
}

static uint32_t roll_start(const char *s, size_t w)
{
    uint32_t h = 0;

    for (size_t i = 0; i < w; i++)
        h = h * ROLL_BASE + (unsigned char)s[i];
    return h;
}

static uint32_t window_hash(const char *s, size_t w)
{
    return roll_mix(roll_start(s, w));
}

static bool indexed(const secret_t *e, int ix)
{
    return ix < BY_HEAD || e->len > PART_LEN;
}

static uint32_t *head_of(int ix, uint32_t hash)
{
    return &reg.heads[ix][hash & (reg.nheads - 1)];
}

/* The first slot of the chain hash falls in, or 0. Under lock. */
static uint32_t chain(int ix, uint32_t hash)
{
    return reg.nheads ? *head_of(ix, hash) : 0;
}

/* Slot s into the chains of its indexes. Under lock. */
static void link_slot(size_t s)
{
    secret_t *e = &reg.slots[s];

    for (int ix = 0; ix < INDEX_COUNT; ix++) {
        if (!indexed(e, ix))
            continue;
        uint32_t *head = head_of(ix, e->hash[ix]);
        e->prev[ix] = 0;
        e->next[ix] = *head;
        if (*head)
            reg.slots[*head - 1].prev[ix] = (uint32_t)s + 1;
        *head = (uint32_t)s + 1;
    }
}

/* Points slot s's neighbours in chain ix (or the chain's head) at
 * to_prev / to_next: s's own neighbours when s leaves, s's new slot
 * number + 1 when s moves. Under lock. */
static void relink_neighbours(size_t s, int ix, uint32_t to_prev,
                              uint32_t to_next)
{
    const secret_t *e = &reg.slots[s];

    if (e->prev[ix])
        reg.slots[e->prev[ix] - 1].next[ix] = to_next;
    else
        *head_of(ix, e->hash[ix]) = to_next;
    if (e->next[ix])
        reg.slots[e->next[ix] - 1].prev[ix] = to_prev;
}

/* Room for one more slot, the indexes rebuilt when it grows. Under lock. */
static void make_room(void)
{
    if (reg.count < reg.capacity)
        return;
    reg.capacity = reg.capacity ? 2 * reg.capacity : 16;
    reg.slots = forge_xrealloc(reg.slots, reg.capacity * sizeof(secret_t));
    reg.nheads = reg.capacity;
    for (int ix = 0; ix < INDEX_COUNT; ix++) {
        free(reg.heads[ix]);
        reg.heads[ix] = forge_xcalloc(reg.nheads, sizeof(uint32_t));
    }
    for (size_t s = 0; s < reg.count; s++)
        link_slot(s);
}

/* The slot holding text, or -1. Under lock. */
static ptrdiff_t find_slot(const char *text, size_t len, uint32_t hash)
{
    for (uint32_t i = chain(BY_TEXT, hash); i;
         i = reg.slots[i - 1].next[BY_TEXT])
        if (reg.slots[i - 1].hash[BY_TEXT] == hash &&
            reg.slots[i - 1].len == len &&
            !memcmp(reg.slots[i - 1].text, text, len))
            return (ptrdiff_t)(i - 1);
    return -1;
}

static void wipe_free(char *text)
{
    if (text)
        explicit_bzero(text, strlen(text));
    free(text);
}

static secret_t made(const char *secret, size_t len, uint32_t hash)
{
    size_t w = len < WINDOW_MAX ? len : WINDOW_MAX;
    secret_t e = {forge_xstrdup(secret),
                  (uint32_t)len,
                  1,
                  (uint32_t)w,
                  {hash, window_hash(secret, w), 0, 0},
                  {0},
                  {0}};

    if (len > PART_LEN) {
        e.hash[BY_HEAD] = hash_bytes(secret, PART_LEN);
        e.hash[BY_TAIL] = hash_bytes(secret + len - PART_LEN, PART_LEN);
    }
    return e;
}

/* Whether secret can be registered, and its length. */
static bool acceptable(const char *secret, size_t *len)
{
    *len = secret ? strlen(secret) : 0;
    return secret && *len >= FORGE_SECRET_MIN_LEN && *len <= UINT32_MAX;
}

/* Under lock. */
static void add_locked(const char *secret, size_t len)
{
    uint32_t hash = hash_bytes(secret, len);
    ptrdiff_t slot;

    if ((slot = find_slot(secret, len, hash)) >= 0) {
        reg.slots[slot].refs++;
        return;
    }
    make_room();
    reg.slots[reg.count] = made(secret, len, hash);
    link_slot(reg.count);
    reg.wlens[reg.slots[reg.count++].wlen]++;
    if (len > reg.longest)
        reg.longest = len;
}

forge_rc_t forge_secret_add(const char *secret)
{
    size_t len;

    if (!acceptable(secret, &len))
        return FORGE_EINVAL;
    pthread_mutex_lock(&lock);
    add_locked(secret, len);
    pthread_mutex_unlock(&lock);
    return FORGE_OK;
}

void forge_secrets_add_many(const char *const *secrets, size_t n)
{
    size_t len;

    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n; i++)
        if (acceptable(secrets[i], &len))
            add_locked(secrets[i], len);
    pthread_mutex_unlock(&lock);
}

/* Slot s out of every chain; the last slot moves into its place. Under
 * lock. */
static void drop_slot(size_t s)
{
    size_t last = reg.count - 1;

    for (int ix = 0; ix < INDEX_COUNT; ix++) /* out: O(1) a chain */
        if (indexed(&reg.slots[s], ix))
            relink_neighbours(s, ix, reg.slots[s].prev[ix],
                              reg.slots[s].next[ix]);
    reg.wlens[reg.slots[s].wlen]--;
    wipe_free(reg.slots[s].text);
    if (s != last) {
        for (int ix = 0; ix < INDEX_COUNT; ix++)
            if (indexed(&reg.slots[last], ix))
                relink_neighbours(last, ix, (uint32_t)s + 1, (uint32_t)s + 1);
        reg.slots[s] = reg.slots[last];
    }
    reg.count = last;
}

void forge_secret_remove(const char *secret)
{
    ptrdiff_t slot;
    size_t len = secret ? strlen(secret) : 0;

    if (!secret)
        return;
    pthread_mutex_lock(&lock);
    slot = find_slot(secret, len, hash_bytes(secret, len));
    if (slot >= 0 && --reg.slots[slot].refs == 0)
        drop_slot((size_t)slot);
    pthread_mutex_unlock(&lock);
}

size_t forge_secret_count(void)
{
    size_t n;

    pthread_mutex_lock(&lock);
    n = reg.count;
    pthread_mutex_unlock(&lock);
    return n;
}

/* The secrets whose window (w bytes) hashes h (mixed) and that stand
 * whole at s[i..]. Under lock. */
static void match_at(forge_redact_runs_t *runs, const char *s, size_t n,
                     size_t i, size_t w, uint32_t h)
{
    for (uint32_t j = chain(BY_WINDOW, h); j;
         j = reg.slots[j - 1].next[BY_WINDOW]) {
        const secret_t *e = &reg.slots[j - 1];
        if (e->hash[BY_WINDOW] == h && e->wlen == w && e->len <= n - i &&
            !memcmp(e->text, s + i, e->len))
            forge_redact_add(runs, i, i + e->len);
    }
}

/* Whole occurrences: at each position, for each window length some secret
 * has, the secrets whose window hashes as the text there (the hash rolled
 * along). Under lock. */
static void find_whole(forge_redact_runs_t *runs, const char *s, size_t n)
{
    for (size_t w = FORGE_SECRET_MIN_LEN; w <= WINDOW_MAX && w <= n; w++) {
        uint32_t h, top = 1; /* ROLL_BASE^(w-1): what the first byte weighs */
        if (!reg.wlens[w])
            continue;
        for (size_t k = 1; k < w; k++)
            top *= ROLL_BASE;
        h = roll_start(s, w);
        for (size_t i = 0;; i++) {
            match_at(runs, s, n, i, w, roll_mix(h));
            if (i + w >= n)
                break;
            h = (h - (unsigned char)s[i] * top) * ROLL_BASE +
                (unsigned char)s[i + w];
        }
    }
}

void forge_secrets_find(forge_redact_runs_t *runs, const char *text, size_t n)
{
    pthread_mutex_lock(&lock);
    if (reg.count)
        find_whole(runs, text, n);
    pthread_mutex_unlock(&lock);
}

/* text[0..k) is the end of a secret longer than k: looked up by the k's
 * last PART_LEN bytes, which are the secret's last ones. Under lock. */
static bool ends_a_secret(const char *text, size_t k)
{
    uint32_t h = hash_bytes(text + k - PART_LEN, PART_LEN);

    for (uint32_t j = chain(BY_TAIL, h); j;
         j = reg.slots[j - 1].next[BY_TAIL]) {
        const secret_t *e = &reg.slots[j - 1];
        if (e->hash[BY_TAIL] == h && e->len > k &&
            !memcmp(e->text + e->len - k, text, k))
            return true;
    }
    return false;
}

/* text[0..k) is the start of a secret longer than k: looked up by its
 * first PART_LEN bytes, the secret's first ones. Under lock. */
static bool starts_a_secret(const char *text, size_t k)
{
    uint32_t h = hash_bytes(text, PART_LEN);

    for (uint32_t j = chain(BY_HEAD, h); j;
         j = reg.slots[j - 1].next[BY_HEAD]) {
        const secret_t *e = &reg.slots[j - 1];
        if (e->hash[BY_HEAD] == h && e->len > k && !memcmp(e->text, text, k))
            return true;
    }
    return false;
}

void forge_secrets_find_cut(forge_redact_runs_t *runs, const char *text,
                            size_t n, bool cut_head)
{
    pthread_mutex_lock(&lock);
    /* the longest cut part is one byte short of the longest secret */
    for (size_t k = PART_LEN; k < reg.longest && k <= n; k++) {
        if (cut_head && ends_a_secret(text, k))
            forge_redact_add(runs, 0, k);
        if (starts_a_secret(text + n - k, k))
            forge_redact_add(runs, n - k, n);
    }
    pthread_mutex_unlock(&lock);
}

void forge_secrets_reset(void)
{
    pthread_mutex_lock(&lock);
    for (size_t s = 0; s < reg.count; s++)
        wipe_free(reg.slots[s].text);
    free(reg.slots);
    for (int ix = 0; ix < INDEX_COUNT; ix++)
        free(reg.heads[ix]);
    memset(&reg, 0, sizeof(reg));
    pthread_mutex_unlock(&lock);
}
