/* SPDX-License-Identifier: Apache-2.0 */
/*
 * replay_target.c - where `replay` moves the group to, as an operator
 * writes it (replay.h): an RFC 3339 time, or an offsets file in Kafka's
 * reset-offsets CSV. Pure parsing, the caller's thread.
 */
#include "admin/replay.h"
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* n digits at *p into *v; advances *p. */
static bool digits(const char **p, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (!isdigit((unsigned char)**p))
            return false;
        *v = *v * 10 + (**p - '0');
    }
    return true;
}

static bool expect(const char **p, char c)
{
    if (**p != c)
        return false;
    (*p)++;
    return true;
}

/* "Z" or "+HH:MM" / "-HH:MM": *offset_s east of UTC. */
static bool zone(const char *p, long *offset_s)
{
    int hh, mm, sign;

    if ((*p == 'Z' || *p == 'z') && !p[1]) {
        *offset_s = 0;
        return true;
    }
    if (*p != '+' && *p != '-')
        return false;
    sign = *p++ == '-' ? -1 : 1;
    if (!digits(&p, 2, &hh) || !expect(&p, ':') || !digits(&p, 2, &mm) || *p ||
        hh > 23 || mm > 59)
        return false;
    *offset_s = sign * (hh * 3600L + mm * 60L);
    return true;
}

bool forge_replay_parse_datetime(const char *text, int64_t *at_ms)
{
    const char *p = text;
    struct tm tm = {0};
    int y, mo, d, h, mi, s, ms = 0, scale = 100;
    long offset_s;

    if (!digits(&p, 4, &y) || !expect(&p, '-') || !digits(&p, 2, &mo) ||
        !expect(&p, '-') || !digits(&p, 2, &d) ||
        (*p != 'T' && *p != 't' && *p != ' '))
        return false;
    p++;
    if (!digits(&p, 2, &h) || !expect(&p, ':') || !digits(&p, 2, &mi) ||
        !expect(&p, ':') || !digits(&p, 2, &s))
        return false;
    if (*p == '.') {
        if (!isdigit((unsigned char)*++p))
            return false;
        for (; isdigit((unsigned char)*p); p++, scale /= 10)
            ms += (*p - '0') * scale;
    }
    if (!zone(p, &offset_s) || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 ||
        mi > 59 || s > 60)
        return false;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    *at_ms = ((int64_t)timegm(&tm) - offset_s) * 1000 + ms;
    return true;
}

/* One line's fields, split at commas (at most 3). */
static size_t split(char *line, char **field)
{
    size_t n = 0;

    for (char *tok = strtok(line, ","); tok && n < 4; tok = strtok(NULL, ","))
        field[n++] = tok;
    return n;
}

static bool number(const char *s, long long min, long long *out)
{
    char *end;

    while (isspace((unsigned char)*s))
        s++;
    errno = 0;
    *out = strtoll(s, &end, 10);
    while (isspace((unsigned char)*end))
        end++;
    return !errno && end != s && !*end && *out >= min;
}

static char *trim(char *s)
{
    char *end;

    while (isspace((unsigned char)*s))
        s++;
    end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

/* One line into target; false (err set) when it is not one. */
static bool offsets_line(char *line, size_t lineno, const char *topic,
                         forge_replay_target_t *t, forge_admin_error_t *err)
{
    char *field[4];
    size_t n = split(line, field);
    long long p, o;

    if (n == 3 && strcmp(trim(field[0]), topic)) {
        forge_admin_fail(err, FORGE_RECOVERY_OFFSETS_FILE,
                         "line %zu: topic %s is not the requests topic %s",
                         lineno, trim(field[0]), topic);
        return false;
    }
    if ((n != 2 && n != 3) || !number(field[n - 2], 0, &p) || p > INT32_MAX ||
        !number(field[n - 1], 0, &o)) {
        forge_admin_fail(err, FORGE_RECOVERY_OFFSETS_FILE,
                         "line %zu: not \"topic,partition,offset\" nor "
                         "\"partition,offset\"",
                         lineno);
        return false;
    }
    for (size_t i = 0; i < t->offset_count; i++)
        if (t->offsets[i].partition == (int32_t)p) {
            forge_admin_fail(err, FORGE_RECOVERY_OFFSETS_FILE,
                             "line %zu: partition %lld named twice", lineno, p);
            return false;
        }
    t->offsets =
        forge_xrealloc(t->offsets, (t->offset_count + 1) * sizeof(*t->offsets));
    t->offsets[t->offset_count++] = (forge_replay_offset_t){(int32_t)p, o};
    return true;
}

forge_admin_code_t forge_replay_read_offsets(const char *path,
                                             const char *topic,
                                             forge_replay_target_t *target,
                                             forge_admin_error_t *err)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    size_t lineno = 0;
    bool ok = true;

    memset(target, 0, sizeof(*target));
    target->kind = FORGE_REPLAY_OFFSETS;
    if (!f)
        return forge_admin_fail(err, FORGE_RECOVERY_OFFSETS_FILE,
                                "cannot read %s: %s", path, strerror(errno));
    while (ok && fgets(line, sizeof(line), f)) {
        char *l = trim(line);
        lineno++;
        if (*l && *l != '#')
            ok = offsets_line(l, lineno, topic, target, err);
    }
    fclose(f);
    if (ok && !target->offset_count) {
        forge_admin_fail(err, FORGE_RECOVERY_OFFSETS_FILE,
                         "%s names no partition", path);
        ok = false;
    }
    if (!ok)
        forge_replay_target_clear(target);
    return ok ? FORGE_RECOVERY_OK : FORGE_RECOVERY_OFFSETS_FILE;
}

void forge_replay_target_clear(forge_replay_target_t *target)
{
    free(target->offsets);
    target->offsets = NULL;
    target->offset_count = 0;
}
