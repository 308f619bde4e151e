/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe/notify.h - systemd's readiness protocol without libsystemd: one
 * datagram per message to the AF_UNIX socket named by $NOTIFY_SOCKET (a
 * path, or an abstract name written with a leading '@'), as sd_notify(3)
 * documents. The worker sends READY=1 once it is ready, WATCHDOG=1 from its
 * loop, STOPPING=1 when it drains (health.h decides when).
 *
 * Threads: any; each call opens, sends and closes its own socket.
 */
#ifndef FORGE_OBSERVE_NOTIFY_H
#define FORGE_OBSERVE_NOTIFY_H

/* Sends state ("READY=1\nSTATUS=...", newline-separated assignments).
 * 0 sent; 1 nothing to do ($NOTIFY_SOCKET unset or empty: not started by
 * systemd with Type=notify); -1 it could not be sent (errno says why). */
int forge_notify(const char *state);

/* The watchdog interval the service manager asks for ($WATCHDOG_USEC,
 * when $WATCHDOG_PID is unset or this process), in ms; 0 when none. */
long long forge_notify_watchdog_ms(void);

#endif
