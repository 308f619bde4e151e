/* SPDX-License-Identifier: Apache-2.0 */
/*
 * credentials.c - the credentials file's name and content (credentials.h).
 */
#include "render/credentials.h"

#include <string.h>

static void put_pair(forge_buf_t *out, const char *name, const char *value)
{
    forge_buf_append(out, name, strlen(name) + 1);
    forge_buf_append(out, value, strlen(value) + 1);
}

bool forge_render_credential_pairs(const char *token, const forge_kv_t *env,
                                   size_t env_count,
                                   const forge_kv_t *secret_env,
                                   size_t secret_env_count, forge_buf_t *out)
{
    if (!token && !env_count && !secret_env_count)
        return false;
    if (token)
        put_pair(out, "FORGE_INGEST_TOKEN", token);
    for (size_t i = 0; i < env_count; i++)
        put_pair(out, env[i].key, env[i].value);
    for (size_t i = 0; i < secret_env_count; i++)
        put_pair(out, secret_env[i].key, secret_env[i].value);
    return true;
}

bool forge_render_credentials(const forge_launch_t *l, forge_buf_t *out)
{
    return forge_render_credential_pairs(l->ingest_token, l->env, l->env_count,
                                         l->secret_env, l->secret_env_count,
                                         out);
}

bool forge_render_is_credentials_name(const char *name)
{
    size_t n = strlen(FORGE_CREDENTIALS_FILE);

    if (strncmp(name, FORGE_CREDENTIALS_FILE, n))
        return false;
    if (!name[n])
        return true;
    return name[n] == '.' && name[n + 1] &&
           strspn(name + n + 1, "0123456789") == strlen(name + n + 1);
}

char *forge_render_credentials_name(int restart)
{
    forge_buf_t b = FORGE_BUF_INIT;

    forge_buf_puts(&b, FORGE_CREDENTIALS_FILE);
    if (restart > 0) {
        forge_buf_putc(&b, '.');
        forge_buf_put_long(&b, restart);
    }
    return forge_buf_take(&b);
}
