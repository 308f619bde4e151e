/* SPDX-License-Identifier: Apache-2.0 */
/*
 * try.c - what a try changes in what is rendered (try.h): its tag, read
 * back too; the requeue rule; the script's marker; a later try's body.
 */
#include "render/try.h"
#include "base/util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

char *forge_try_tag(const char *launch_id, int attempt, int try_num)
{
    forge_buf_t b = FORGE_BUF_INIT;

    forge_buf_puts(&b, FORGE_JOB_TAG_PREFIX);
    forge_buf_puts(&b, launch_id);
    forge_buf_putc(&b, ':');
    forge_buf_put_long(&b, attempt);
    if (try_num > 1) {
        forge_buf_putc(&b, ':');
        forge_buf_put_long(&b, try_num);
    }
    return forge_buf_take(&b);
}

/* A decimal number from 1 to INT_MAX, all of [s, end): *out. */
static bool number(const char *s, const char *end, int *out)
{
    long v = 0;

    if (s == end || *s == '0')
        return false;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9' || v > (INT_MAX - (*s - '0')) / 10)
            return false;
        v = v * 10 + (*s - '0');
    }
    *out = (int)v;
    return true;
}

bool forge_try_tag_parse(const char *comment, forge_try_tag_parts_t *out)
{
    size_t prefix = strlen(FORGE_JOB_TAG_PREFIX);
    const char *id, *colon, *second, *end;

    if (!comment || strncmp(comment, FORGE_JOB_TAG_PREFIX, prefix))
        return false;
    id = comment + prefix;
    colon = strchr(id, ':');
    if (!colon || colon == id)
        return false;
    end = colon + 1 + strlen(colon + 1);
    second = strchr(colon + 1, ':');
    *out = (forge_try_tag_parts_t){id, (size_t)(colon - id), 0, 1};
    if (!number(colon + 1, second ? second : end, &out->attempt))
        return false;
    return !second ||
           (number(second + 1, end, &out->try_num) && out->try_num >= 2);
}

bool forge_try_requeue_off(const forge_launch_t *l, const forge_config_t *cfg)
{
    forge_retry_policy_t p = forge_retry_policy_merge(&cfg->retry, &l->retry);

    return (l->retry.set & FORGE_RETRY_SET_EXCLUDE) &&
           l->retry.value.exclude_failed_nodes &&
           (p.causes & FORGE_RETRY_NODE_FAIL);
}

void forge_try_put_marker(forge_buf_t *s)
{
    forge_buf_puts(
        s, "# Which try: a retry of a failed try is a new job of the same "
           "attempt, its try\n# in FORGE_TRY (1 when unset); its first run "
           "marks the logs it appends to.\n"
           "forge_try=\"${FORGE_TRY:-1}\"\n"
           "if ! [[ $forge_try =~ ^[0-9]{1,9}$ ]]; then\n"
           "    forge_try=1\n"
           "fi\n"
           "if [ \"$forge_try\" -gt 1 ] && [ \"$forge_restart\" -eq 0 ]; then\n"
           "    echo \"== forge: try $forge_try ==\"\n"
           "    echo \"== forge: try $forge_try ==\" >&2\n"
           "fi\n\n");
}

static void apply_component(json_t *job, const char *tag, int try_num,
                            const char *excluded_nodes)
{
    json_t *env = json_object_get(job, "environment");
    forge_buf_t b = FORGE_BUF_INIT;

    json_object_set_new(job, "comment", json_string(tag));
    if (try_num > 1 && json_is_array(env)) {
        forge_buf_puts(&b, "FORGE_TRY=");
        forge_buf_put_long(&b, try_num);
        json_array_append_new(env, json_string(forge_buf_str(&b)));
    }
    if (excluded_nodes && *excluded_nodes)
        json_object_set_new(job, "excluded_nodes", json_string(excluded_nodes));
    forge_buf_clear(&b);
}

void forge_try_apply(json_t *payload, const char *launch_id, int attempt,
                     int try_num, const char *excluded_nodes)
{
    json_t *jobs = json_object_get(payload, "jobs"), *job;
    char *tag;
    size_t i;

    if (try_num <= 1 && !(excluded_nodes && *excluded_nodes))
        return;
    tag = forge_try_tag(launch_id, attempt, try_num);
    if ((job = json_object_get(payload, "job")))
        apply_component(job, tag, try_num, excluded_nodes);
    json_array_foreach(jobs, i, job)
        apply_component(job, tag, try_num, excluded_nodes);
    free(tag);
}
