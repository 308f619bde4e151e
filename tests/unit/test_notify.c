/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_notify.c - systemd's notification protocol (src/observe/notify.c) and
 * what the worker sends through it (src/observe/health.c): each test binds a
 * Unix datagram socket, as systemd does, names it in NOTIFY_SOCKET (a path,
 * or an abstract name with '@') and reads the datagrams the worker sent:
 * READY=1 once, the first time the loop is ready; WATCHDOG=1 from the
 * loop's beat when WATCHDOG_USEC asks for it, at most every quarter of it;
 * STOPPING=1 on drain.
 */
#include "clock/clock.h"
#include "observe/health.h"
#include "observe/notify.h"

#include <criterion/criterion.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int sock = -1;
static char path[108];

/* Binds the socket systemd would listen on, at a path or (abstract) a
 * name, and names it in NOTIFY_SOCKET. */
static void listen_at(bool abstract)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    socklen_t len;

    sock = socket(AF_UNIX, SOCK_DGRAM, 0);
    cr_assert_geq(sock, 0);
    if (abstract) {
        snprintf(path, sizeof(path), "@forge-notify-test-%d", (int)getpid());
        memcpy(sa.sun_path, path, strlen(path));
        sa.sun_path[0] = '\0';
        len =
            (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
    } else {
        snprintf(path, sizeof(path), "/tmp/forge-notify-test-%d.sock",
                 (int)getpid());
        unlink(path);
        strcpy(sa.sun_path, path);
        len = sizeof(sa);
    }
    cr_assert_eq(bind(sock, (struct sockaddr *)&sa, len), 0);
    setenv("NOTIFY_SOCKET", path, 1);
}

static void teardown(void)
{
    if (sock >= 0)
        close(sock);
    if (path[0] == '/')
        unlink(path);
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
}

/* The next datagram within ms, or "" when none came. */
static const char *next_message(int ms)
{
    static char buf[512];
    struct pollfd p = {sock, POLLIN, 0};
    ssize_t n;

    buf[0] = '\0';
    if (poll(&p, 1, ms) != 1)
        return buf;
    n = recv(sock, buf, sizeof(buf) - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

TestSuite(notify, .fini = teardown);

Test(notify, a_message_reaches_a_socket_named_by_its_path)
{
    listen_at(false);
    cr_assert_eq(forge_notify("READY=1\nSTATUS=hello"), 0);
    cr_assert_str_eq(next_message(1000), "READY=1\nSTATUS=hello");
}

Test(notify, a_message_reaches_an_abstract_socket)
{
    listen_at(true);
    cr_assert_eq(forge_notify("WATCHDOG=1"), 0);
    cr_assert_str_eq(next_message(1000), "WATCHDOG=1");
}

Test(notify, without_notify_socket_nothing_is_sent)
{
    unsetenv("NOTIFY_SOCKET");
    cr_assert_eq(forge_notify("READY=1"), 1);
    setenv("NOTIFY_SOCKET", "", 1);
    cr_assert_eq(forge_notify("READY=1"), 1);
}

Test(notify, an_address_it_cannot_use_fails)
{
    setenv("NOTIFY_SOCKET", "relative/path", 1);
    cr_assert_eq(forge_notify("READY=1"), -1);
    setenv("NOTIFY_SOCKET", "/nonexistent/forge/notify.sock", 1);
    cr_assert_eq(forge_notify("READY=1"), -1);
}

Test(notify, the_watchdog_interval_is_read_for_this_process_only)
{
    char pid[32];

    cr_assert_eq(forge_notify_watchdog_ms(), 0);
    setenv("WATCHDOG_USEC", "2500000", 1);
    cr_assert_eq(forge_notify_watchdog_ms(), 2500);
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    setenv("WATCHDOG_PID", pid, 1);
    cr_assert_eq(forge_notify_watchdog_ms(), 2500);
    setenv("WATCHDOG_PID", "1", 1); /* another process's */
    cr_assert_eq(forge_notify_watchdog_ms(), 0);
    unsetenv("WATCHDOG_PID");
    setenv("WATCHDOG_USEC", "12x", 1);
    cr_assert_eq(forge_notify_watchdog_ms(), 0);
}

Test(notify, ready_goes_once_the_loop_is_ready_then_only_its_status)
{
    listen_at(false);
    forge_health_init(300, 60);
    forge_health_loop_ready(0); /* not ready yet: nothing new to say */
    cr_assert_str_eq(next_message(200), "");
    forge_health_loop_ready(1);
    cr_assert_str_eq(next_message(1000),
                     "READY=1\nSTATUS=ready: every owned partition is "
                     "restored");
    forge_health_loop_ready(1); /* no change: nothing */
    cr_assert_str_eq(next_message(200), "");
    forge_health_loop_ready(0); /* a rebalance: restoring again */
    cr_assert_str_eq(next_message(1000), "STATUS=restoring partitions");
    forge_health_loop_ready(2); /* READY=1 went already */
    cr_assert_str_eq(next_message(1000),
                     "STATUS=ready: standby, this worker owns no partition");
    forge_health_stopping();
    cr_assert_str_eq(next_message(1000),
                     "STOPPING=1\nSTATUS=draining: no new requests");
    forge_health_stopping(); /* once */
    cr_assert_str_eq(next_message(200), "");
}

Test(notify, the_loop_beat_sends_watchdog_at_most_every_quarter_interval)
{
    listen_at(false);
    setenv("WATCHDOG_USEC", "800000", 1); /* 800 ms: one per 200 ms at most */
    forge_health_init(300, 60);
    forge_health_beat();
    cr_assert_str_eq(next_message(1000), "WATCHDOG=1");
    forge_health_beat(); /* at once again: too soon */
    cr_assert_str_eq(next_message(100), "");
    forge_clock_sleep_ms(250);
    forge_health_beat();
    cr_assert_str_eq(next_message(1000), "WATCHDOG=1");
}

Test(notify, without_watchdog_usec_the_beat_sends_nothing)
{
    listen_at(false);
    forge_health_init(300, 60);
    forge_health_beat();
    cr_assert_str_eq(next_message(200), "");
}
