/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe/notify.c - sd_notify's datagram protocol (notify.h). Threads: any
 * caller (the loop's, in practice); nothing is kept between calls.
 */
#include "observe/notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* $NOTIFY_SOCKET as an address: "@name" is abstract (a NUL first). */
static int address_of(const char *name, struct sockaddr_un *sa, socklen_t *len)
{
    size_t n = strlen(name);

    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    if ((name[0] != '/' && name[0] != '@') || n >= sizeof(sa->sun_path)) {
        errno = EINVAL; /* vsock: and other kinds are not supported */
        return -1;
    }
    memcpy(sa->sun_path, name, n);
    if (name[0] == '@')
        sa->sun_path[0] = '\0';
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
                       (name[0] == '/'));
    return 0;
}

int forge_notify(const char *state)
{
    const char *name = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa;
    socklen_t len;
    ssize_t sent;
    int fd, saved;

    if (!name || !*name)
        return 1;
    if (address_of(name, &sa, &len) != 0)
        return -1;
    if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
        return -1;
    /* never blocks: a manager that does not read costs a message, never
     * the loop's time */
    sent = sendto(fd, state, strlen(state), MSG_NOSIGNAL | MSG_DONTWAIT,
                  (struct sockaddr *)&sa, len);
    saved = errno;
    close(fd);
    errno = saved;
    return sent == (ssize_t)strlen(state) ? 0 : -1;
}

long long forge_notify_watchdog_ms(void)
{
    const char *usec = getenv("WATCHDOG_USEC");
    const char *pid = getenv("WATCHDOG_PID");
    char *end;
    long long v;

    if (!usec || !*usec)
        return 0;
    if (pid && *pid && strtol(pid, NULL, 10) != (long)getpid())
        return 0;
    v = strtoll(usec, &end, 10);
    if (*end || v <= 0)
        return 0;
    return v / 1000 > 0 ? v / 1000 : 1;
}
