#ifndef BRIDGE_CLIBWEBSOCKETS_SHIM_H
#define BRIDGE_CLIBWEBSOCKETS_SHIM_H
#include <libwebsockets.h>
#include <stdlib.h>
#include <string.h>

// Swift cannot import function-like or composite macros: these wrappers give them a name.

static inline size_t bridge_lws_pre(void) { return LWS_PRE; }

#ifdef __linux__
#include <sys/prctl.h>
/// Names the calling thread (the service thread, in traces and `perf stat --per-thread`); Linux
/// keeps the first 15 bytes. prctl is variadic, which Swift cannot call.
static inline void bridge_name_thread(const char *name) { prctl(PR_SET_NAME, name, 0, 0, 0); }
#else
static inline void bridge_name_thread(const char *name) { (void)name; }
#endif

#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
/// The number of runnable tasks on the machine right now (the fourth field of /proc/loadavg,
/// "R/T", read again from `fd`, an open /proc/loadavg), the caller included; -1 if unreadable.
static inline int bridge_runnable_tasks(int fd) {
    char text[128];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n <= 0) return -1;
    text[n] = 0;
    const char *p = text;
    for (int field = 0; field < 3; field++) {
        p = strchr(p, ' ');
        if (!p) return -1;
        p++;
    }
    return atoi(p);
}

/// The calling thread's kernel id (for /proc/self/task/ID), which Swift cannot get: syscall is variadic.
static inline int bridge_gettid(void) { return (int)syscall(SYS_gettid); }

/// CLOCK_MONOTONIC in nanoseconds (the vDSO: no system call), for the service loop's polling budget.
static inline uint64_t bridge_monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static inline uint64_t bridge_lws_option_disable_ipv6(void) { return LWS_SERVER_OPTION_DISABLE_IPV6; }
static inline uint64_t bridge_lws_option_validate_utf8(void) { return LWS_SERVER_OPTION_VALIDATE_UTF8; }

/// Writes `len` bytes at `buf` (which must have LWS_PRE bytes of headroom before it).
static inline int bridge_lws_write(struct lws *wsi, unsigned char *buf, size_t len, int binary, int first, int final) {
    int mode;
    if (first) {
        mode = binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT;
    } else {
        mode = LWS_WRITE_CONTINUATION;
    }
    if (!final) {
        mode |= LWS_WRITE_NO_FIN;
    }
    return lws_write(wsi, buf, len, (enum lws_write_protocol)mode);
}

/// Writes `len` bytes at `buf` (LWS_PRE bytes of headroom before it) as they are: whole
/// WebSocket frames, headers included, that the caller built (a server's: unmasked).
static inline int bridge_lws_write_raw(struct lws *wsi, unsigned char *buf, size_t len) {
    return lws_write(wsi, buf, len, LWS_WRITE_RAW);
}

/// Copies a request header into `dest` (NUL-terminated); returns its length or -1 when absent.
static inline int bridge_lws_header(struct lws *wsi, enum lws_token_indexes token, char *dest, int len) {
    if (lws_hdr_total_length(wsi, token) <= 0) {
        return -1;
    }
    return lws_hdr_copy(wsi, dest, len, token);
}

/// Adds the header lines in `extra` ("name: value\r\n" each, lower-case names) to a response
/// head being built at `*p`. Returns nonzero on error.
static inline int bridge_lws_add_header_lines(struct lws *wsi, const char *extra, unsigned char **p, unsigned char *end) {
    while (*extra) {
        const char *colon = strchr(extra, ':');
        const char *eol = strstr(extra, "\r\n");
        if (!colon || !eol || colon > eol) {
            return 1;
        }
        char name[64];
        size_t nameLength = (size_t)(colon - extra) + 1;
        if (nameLength >= sizeof(name)) {
            return 1;
        }
        memcpy(name, extra, nameLength);
        name[nameLength] = '\0';
        const char *value = colon + 1;
        while (*value == ' ') value++;
        if (lws_add_http_header_by_name(wsi, (const unsigned char *)name, (const unsigned char *)value, (int)(eol - value), p, end)) {
            return 1;
        }
        extra = eol + 2;
    }
    return 0;
}

/// Answers the current HTTP request with `304 Not Modified`, the header lines in `extra`
/// ("name: value\r\n" each, lower-case names) and no body. Returns nonzero on error.
static inline int bridge_lws_not_modified(struct lws *wsi, const char *extra) {
    unsigned char buffer[LWS_PRE + 1024];
    unsigned char *start = buffer + LWS_PRE, *p = start, *end = buffer + sizeof(buffer) - 1;
    if (lws_add_http_header_status(wsi, HTTP_STATUS_NOT_MODIFIED, &p, end)) {
        return 1;
    }
    if (bridge_lws_add_header_lines(wsi, extra, &p, end)) {
        return 1;
    }
    return lws_finalize_write_http_header(wsi, start, &p, end);
}

/// The head of an HTTP response with `status`, `content_type`, a `len`-byte body and the header
/// lines in `extra`. Returns nonzero on error.
static inline int bridge_lws_respond_head(struct lws *wsi, unsigned int status, const char *content_type, const char *extra,
                                          size_t len) {
    unsigned char buffer[LWS_PRE + 1024];
    unsigned char *start = buffer + LWS_PRE, *p = start, *end = buffer + sizeof(buffer) - 1;
    if (lws_add_http_common_headers(wsi, status, content_type, (lws_filepos_t)len, &p, end)) {
        return 1;
    }
    if (bridge_lws_add_header_lines(wsi, extra, &p, end)) {
        return 1;
    }
    return lws_finalize_write_http_header(wsi, start, &p, end);
}

/// Answers the current HTTP request with `status`, `content_type`, the header lines in `extra`
/// and the `len` bytes at `body` (a dynamic response such as /metrics). lws keeps what the
/// socket does not take at once and sends it later. Returns nonzero on error.
static inline int bridge_lws_respond(struct lws *wsi, unsigned int status, const char *content_type, const char *extra,
                                     const unsigned char *body, size_t len) {
    if (bridge_lws_respond_head(wsi, status, content_type, extra, len)) {
        return 1;
    }
    if (len == 0) {
        return 0;
    }
    unsigned char *copy = malloc(LWS_PRE + len);
    if (!copy) {
        return 1;
    }
    memcpy(copy + LWS_PRE, body, len);
    int written = lws_write(wsi, copy + LWS_PRE, len, LWS_WRITE_HTTP_FINAL);
    free(copy);
    return written < (int)len ? 1 : 0;
}

/// `bridge_lws_respond` for a body the caller built with `LWS_PRE` free bytes in front of `body`:
/// written from where it is, with no copy (lws keeps what the socket does not take at once).
static inline int bridge_lws_respond_prepadded(struct lws *wsi, unsigned int status, const char *content_type, const char *extra,
                                               unsigned char *body, size_t len) {
    if (bridge_lws_respond_head(wsi, status, content_type, extra, len)) {
        return 1;
    }
    if (len == 0) {
        return 0;
    }
    int written = lws_write(wsi, body, len, LWS_WRITE_HTTP_FINAL);
    return written < (int)len ? 1 : 0;
}

/// Copies the whole query string (all URI arguments joined by '&') into `dest`.
static inline int bridge_lws_query(struct lws *wsi, char *dest, int len) {
    int total = 0;
    int n = 0;
    dest[0] = '\0';
    while (1) {
        char part[1024];
        int got = lws_hdr_copy_fragment(wsi, part, sizeof(part), WSI_TOKEN_HTTP_URI_ARGS, n);
        if (got < 0) {
            break;
        }
        if (total + got + 2 >= len) {
            return -1;
        }
        if (n > 0) {
            dest[total++] = '&';
        }
        memcpy(dest + total, part, (size_t)got);
        total += got;
        dest[total] = '\0';
        n++;
    }
    return total;
}

/// Appends one header while a client builds its handshake (LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER).
static inline int bridge_lws_append_handshake_header(struct lws *wsi, void *in, size_t len, const char *name, const char *value) {
    unsigned char **p = (unsigned char **)in;
    unsigned char *end = (*p) + len;
    return lws_add_http_header_by_name(wsi, (const unsigned char *)name, (const unsigned char *)value, (int)strlen(value), p, end);
}

/// Sets the close status and reason that the next close of `wsi` sends.
static inline void bridge_lws_close_reason(struct lws *wsi, int status, const char *reason) {
    lws_close_reason(wsi, (enum lws_close_status)status, (unsigned char *)reason, reason ? strlen(reason) : 0);
}
/// Connects a raw TCP client (no protocol of lws's on it) to a numeric address, bound to the
/// local protocol `protocol`, `opaque` set as the wsi's opaque user data. NULL when it failed at once.
static inline struct lws *bridge_lws_connect_raw(struct lws_context *context, struct lws_vhost *vhost, const char *address,
                                                 int port, const char *protocol, void *opaque) {
    struct lws_client_connect_info info;
    memset(&info, 0, sizeof(info));
    info.context = context;
    info.vhost = vhost;
    info.address = address;
    info.host = address;
    info.port = port;
    info.path = "/";
    info.method = "RAW";
    info.protocol = protocol;
    info.local_protocol_name = protocol;
    info.opaque_user_data = opaque;
    return lws_client_connect_via_info(&info);
}

/// Closes `wsi` from outside its callback, at the service thread's next turn.
static inline void bridge_lws_close_async(struct lws *wsi) { lws_set_timeout(wsi, PENDING_TIMEOUT_AWAITING_PROXY_RESPONSE, LWS_TO_KILL_ASYNC); }

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
/// Sends small writes at once (no Nagle delay) on `wsi`'s socket.
static inline void bridge_lws_nodelay(struct lws *wsi) {
    int one = 1;
    setsockopt(lws_get_socket_fd(wsi), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

#endif
