/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_util.c - the one reader of whole inputs (util.h): a file up to its
 * limit, a larger one refused, a stream read past its limit handed back
 * as read (the caller says what is wrong), what cannot be read refused.
 */
#include "base/error.h"
#include "base/util.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64];

static void write_file(const char *text, size_t n)
{
    int fd;

    strcpy(path, "/tmp/forge-test-util-XXXXXX");
    fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, n), (ssize_t)n);
    close(fd);
}

static void remove_file(void)
{
    unlink(path);
}

TestSuite(util, .fini = remove_file);

Test(util, a_file_up_to_its_limit_is_read_whole)
{
    char *buf = NULL;
    size_t len = 99;

    write_file("hello\0world", 11);
    cr_assert_eq(forge_read_file(path, 11, &buf, &len), FORGE_OK);
    cr_assert_eq(len, 11);
    cr_assert_eq(memcmp(buf, "hello\0world", 12), 0); /* NUL-terminated */
    free(buf);
}

Test(util, a_file_over_its_limit_is_refused)
{
    char *buf = (char *)"x";
    size_t len = 99;

    write_file("0123456789", 10);
    cr_assert_eq(forge_read_file(path, 9, &buf, &len), FORGE_ETOO_LARGE);
    cr_assert_null(buf);
    cr_assert_eq(len, 0);
}

Test(util, a_large_file_is_read_across_many_reads)
{
    size_t n = 300 * 1000;
    char *big = malloc(n), *buf = NULL;
    size_t len = 0;

    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + i % 26);
    write_file(big, n);
    cr_assert_eq(forge_read_file(path, n, &buf, &len), FORGE_OK);
    cr_assert_eq(len, n);
    cr_assert_eq(memcmp(buf, big, n), 0);
    free(buf);
    cr_assert_eq(forge_read_file(path, n - 1, &buf, &len), FORGE_ETOO_LARGE);
    free(big);
}

Test(util, what_cannot_be_read_is_eio)
{
    char *buf = NULL;
    size_t len = 0;

    cr_assert_eq(forge_read_file("/nonexistent/forge", 10, &buf, &len),
                 FORGE_EIO);
    cr_assert_eq(forge_read_file("/tmp", 10, &buf, &len), FORGE_EIO);
    cr_assert_null(buf);
}

Test(util, a_stream_over_its_limit_is_handed_back_as_read)
{
    FILE *f;
    char *buf = NULL;
    size_t len = 0;

    write_file("0123456789", 10);
    f = fopen(path, "rb");
    cr_assert_eq(forge_read_stream(f, 4, &buf, &len), FORGE_OK);
    cr_assert_gt(len, 4, "more than max says it is too large");
    cr_assert_eq(strncmp(buf, "0123456789", len), 0);
    cr_assert_eq(buf[len], '\0');
    fclose(f);
    free(buf);
}

Test(util, write_all_writes_every_byte)
{
    int fds[2];
    char out[5000], in[5000];
    size_t got = 0;
    ssize_t n;

    for (size_t i = 0; i < sizeof(out); i++)
        out[i] = (char)i;
    cr_assert_eq(pipe(fds), 0);
    cr_assert(forge_write_all(fds[1], out, sizeof(out)));
    close(fds[1]);
    while ((n = read(fds[0], in + got, sizeof(in) - got)) > 0)
        got += (size_t)n;
    close(fds[0]);
    cr_assert_eq(got, sizeof(out));
    cr_assert_eq(memcmp(in, out, sizeof(out)), 0);
}

Test(util, write_all_says_when_it_cannot)
{
    int fd = open("/dev/full", O_WRONLY);

    cr_assert_geq(fd, 0);
    errno = 0;
    cr_assert_not(forge_write_all(fd, "x", 1));
    cr_assert_eq(errno, ENOSPC);
    close(fd);
    cr_assert_not(forge_write_all(-1, "x", 1));
    cr_assert_eq(errno, EBADF);
    cr_assert(forge_write_all(-1, "", 0), "nothing to write: done");
}
