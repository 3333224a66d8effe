#ifndef SECURITYSERVICES_CSDBUS_SHIM_H
#define SECURITYSERVICES_CSDBUS_SHIM_H
/* sd-bus (libsystemd), for the Secret Service: the bus connection, messages read and written one value at a time
 * (Swift does not call C's variadic functions), and the caller's credentials as the bus daemon gives them. */
#include <systemd/sd-bus.h>
#include <errno.h>
#include <stdlib.h>

/* An sd_bus_error on the heap, for handlers that answer with an error. */
static inline sd_bus_error *csdbus_error_new(void) {
    sd_bus_error *error = calloc(1, sizeof(sd_bus_error));
    return error;
}

static inline void csdbus_error_free(sd_bus_error *error) {
    if (error == NULL) return;
    sd_bus_error_free(error);
    free(error);
}

/* Replies to `call` with the error `name` and `message` (both copied). */
static inline int csdbus_reply_error(sd_bus_message *call, const char *name, const char *message) {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    sd_bus_error_set(&error, name, message);
    int r = sd_bus_reply_method_error(call, &error);
    sd_bus_error_free(&error);
    return r;
}

/* The sender's uid and pid as the bus daemon records them (GetConnectionCredentials: what the kernel said when the
 * sender connected), not as the sender's process says now. */
static inline int csdbus_sender(sd_bus_message *call, uid_t *uid, pid_t *pid) {
    sd_bus_creds *creds = NULL;
    int r = sd_bus_query_sender_creds(call, SD_BUS_CREDS_PID | SD_BUS_CREDS_EUID | SD_BUS_CREDS_UID, &creds);
    if (r < 0) return r;
    r = sd_bus_creds_get_pid(creds, pid);
    if (r >= 0 && sd_bus_creds_get_euid(creds, uid) < 0) r = sd_bus_creds_get_uid(creds, uid);
    sd_bus_creds_unref(creds);
    return r;
}

/* Whether the bus daemon still names `pid` as the process of the connection `sender` (asked again now): 1 yes, 0 no
 * (the connection is gone, or another process is named), < 0 an error. Asked after the caller's pid was pinned with a
 * pidfd: a connection that is still there means the pid was not reused in between. */
static inline int csdbus_sender_still(sd_bus_message *call, const char *sender, pid_t pid) {
    sd_bus_creds *creds = NULL;
    int r = sd_bus_get_name_creds(sd_bus_message_get_bus(call), sender, SD_BUS_CREDS_PID, &creds);
    if (r == -ENXIO || r == -ESRCH) return 0;
    if (r < 0) return r;
    pid_t now = 0;
    r = sd_bus_creds_get_pid(creds, &now);
    sd_bus_creds_unref(creds);
    if (r < 0) return r;
    return now == pid;
}

/* One bus call of the Secret Service, answered by the callback with the message (not yet answered when it returns
 * 0: sd-bus then answers UnknownMethod). */
typedef int (*csdbus_handler)(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);

#endif
