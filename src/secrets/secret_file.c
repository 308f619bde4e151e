/* SPDX-License-Identifier: Apache-2.0 */
/*
 * secret_file.c - secret files checked and password files read
 * (secret_file.h): open once, fstat what was opened, read it whole.
 */
#include "secrets/secret_file.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The open descriptor of path after the checks, or -1 with err set. */
static int open_checked(const char *path, const char *var, mode_t refused,
                        forge_error_t *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;

    if (fd < 0) {
        forge_error_set(err, FORGE_ECONFIG, var, "%s %s cannot be opened: %s",
                        var, path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        forge_error_set(err, FORGE_ECONFIG, var, "%s %s is not a regular file",
                        var, path);
    } else if (st.st_mode & refused) {
        forge_error_set(err, FORGE_ECONFIG, var,
                        "%s %s is open to %s (mode %03o): chmod %s it", var,
                        path, (refused & 070) ? "group or others" : "others",
                        (unsigned)(st.st_mode & 0777),
                        (refused & 070) ? "600" : "o-rwx");
    } else {
        return fd;
    }
    close(fd);
    return -1;
}

forge_rc_t forge_secret_file_check(const char *path, const char *var,
                                   mode_t refused, forge_error_t *err)
{
    int fd = open_checked(path, var, refused, err);

    if (fd < 0)
        return FORGE_ECONFIG;
    close(fd);
    return FORGE_OK;
}

/* Reads fd whole, at most max bytes, into buf (max + 1 bytes): the length
 * read, or -1 on an error or more than max. */
static ssize_t read_all(int fd, char *buf, size_t max)
{
    size_t got = 0;
    ssize_t n;

    while (got <= max) {
        n = read(fd, buf + got, max + 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return (ssize_t)got;
        got += (size_t)n;
    }
    return -1;
}

/* What is wrong with the password in buf[0..len) once its trailing line
 * break is dropped (len updated), or NULL. */
static const char *password_problem(char *buf, size_t *len)
{
    if (*len > 0 && buf[*len - 1] == '\n')
        (*len)--;
    if (*len > 0 && buf[*len - 1] == '\r')
        (*len)--;
    buf[*len] = '\0';
    if (*len == 0)
        return "is empty";
    if (memchr(buf, '\0', *len) || memchr(buf, '\n', *len) ||
        memchr(buf, '\r', *len))
        return "holds more than one line (or a NUL byte)";
    return NULL;
}

forge_rc_t forge_secret_file_read(const char *path, const char *var, char **out,
                                  forge_error_t *err)
{
    int fd = open_checked(path, var, 077, err);
    char *buf = NULL;
    const char *problem = NULL;
    ssize_t n;
    size_t len;
    forge_rc_t rc = FORGE_ECONFIG;

    *out = NULL;
    if (fd < 0)
        return rc;
    buf = forge_xcalloc(1, FORGE_SECRET_FILE_MAX + 2);
    if ((n = read_all(fd, buf, FORGE_SECRET_FILE_MAX)) < 0) {
        forge_error_set(err, rc, var,
                        "%s %s cannot be read whole (at most %d bytes)", var,
                        path, FORGE_SECRET_FILE_MAX);
        goto out;
    }
    len = (size_t)n;
    if ((problem = password_problem(buf, &len))) {
        forge_error_set(err, rc, var, "%s %s %s", var, path, problem);
        goto out;
    }
    *out = forge_xstrndup(buf, len);
    rc = FORGE_OK;
out:
    explicit_bzero(buf, FORGE_SECRET_FILE_MAX + 2);
    free(buf);
    close(fd);
    return rc;
}

void forge_secret_free(char *s)
{
    if (!s)
        return;
    explicit_bzero(s, strlen(s));
    free(s);
}
