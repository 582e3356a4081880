/*
 * Stress test for the suspected cause of the old heap corruption (docs/RELIABILITY.md): libwebsockets
 * contexts created on one thread while earlier ones are serviced and destroyed on others, as the
 * bench did before commit 4bab172 (WebSocketClient.close() returned before the old client's service
 * thread had destroyed its context, and the next client's context was created meanwhile).
 *
 * A server context echoes on a port of 127.0.0.1. THREADS workers each create ITERATIONS contexts
 * (every other one also listening on a port of its own, so a vhost with a listen socket is made
 * and torn down too); each context connects a client to the server, sends a message, reads the
 * echo, and is serviced and destroyed on a thread of its own, while the worker already creates
 * the next one. Built with -DWITH_LOCK, creation and destruction take one process-wide lock, as
 * ServiceLoop.createContext and the destroy do since 4bab172.
 *
 *   cc -O1 -g -fsanitize=address tests/fuzz/lws_contexts.c -lwebsockets -lpthread -o /tmp/lws_contexts
 *   /tmp/lws_contexts [THREADS] [ITERATIONS]      # prints "N contexts, M echoes" and exits 0
 *   valgrind --tool=memcheck /tmp/lws_contexts-plain 4 50; valgrind --tool=helgrind ...
 */
#include <libwebsockets.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef WITH_LOCK
static pthread_mutex_t lifecycle = PTHREAD_MUTEX_INITIALIZER;
#define LOCK() pthread_mutex_lock(&lifecycle)
#define UNLOCK() pthread_mutex_unlock(&lifecycle)
#else
#define LOCK()
#define UNLOCK()
#endif

static int server_port;
static atomic_int stop_server;
static atomic_long contexts, echoes, failures;

struct client {
    struct lws_context *context;
    atomic_int done;
};

static int server_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    if (reason == LWS_CALLBACK_RECEIVE) {
        unsigned char buffer[LWS_PRE + 64];
        size_t n = len < 64 ? len : 64;
        memcpy(buffer + LWS_PRE, in, n);
        return lws_write(wsi, buffer + LWS_PRE, n, LWS_WRITE_TEXT) < (int)n ? -1 : 0;
    }
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}

static int client_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    struct client *client = lws_context_user(lws_get_context(wsi));
    switch (reason) {
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        lws_callback_on_writable(wsi);
        break;
    case LWS_CALLBACK_CLIENT_WRITEABLE: {
        unsigned char buffer[LWS_PRE + 8];
        memcpy(buffer + LWS_PRE, "hello", 5);
        if (lws_write(wsi, buffer + LWS_PRE, 5, LWS_WRITE_TEXT) < 5) return -1;
        break;
    }
    case LWS_CALLBACK_CLIENT_RECEIVE:
        atomic_fetch_add(&echoes, 1);
        atomic_store(&client->done, 1);
        return -1;
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
        atomic_fetch_add(&failures, 1);
        atomic_store(&client->done, 1);
        break;
    case LWS_CALLBACK_CLIENT_CLOSED:
        atomic_store(&client->done, 1);
        break;
    default:
        break;
    }
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}

static const struct lws_protocols server_protocols[] = {{"echo", server_callback, 0, 4096, 0, NULL, 0}, {NULL, NULL, 0, 0, 0, NULL, 0}};
static const struct lws_protocols client_protocols[] = {{"echo", client_callback, 0, 4096, 0, NULL, 0}, {NULL, NULL, 0, 0, 0, NULL, 0}};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *server_thread(void *context) {
    while (!atomic_load(&stop_server)) lws_service(context, 0);
    return NULL;
}

/* Services one client's context until its echo came (or 5 s), then destroys it: on its own thread. */
static void *service_and_destroy(void *argument) {
    struct client *client = argument;
    double deadline = now() + 5;
    while (!atomic_load(&client->done) && now() < deadline) lws_service(client->context, 0);
    LOCK();
    lws_context_destroy(client->context);
    UNLOCK();
    free(client);
    return NULL;
}

static void *worker(void *argument) {
    long iterations = (long)argument;
    pthread_t previous[2] = {0, 0};
    for (long i = 0; i < iterations; i++) {
        struct client *client = calloc(1, sizeof *client);
        struct lws_context_creation_info info;
        memset(&info, 0, sizeof info);
        info.port = (i % 2) ? 0 : CONTEXT_PORT_NO_LISTEN;
        info.iface = "127.0.0.1";
        info.protocols = client_protocols;
        info.gid = -1;
        info.uid = -1;
        info.options = LWS_SERVER_OPTION_DISABLE_IPV6;
        info.user = client;
        LOCK();
        client->context = lws_create_context(&info);
        UNLOCK();
        if (!client->context) { atomic_fetch_add(&failures, 1); free(client); continue; }
        atomic_fetch_add(&contexts, 1);
        struct lws_client_connect_info connect;
        memset(&connect, 0, sizeof connect);
        connect.context = client->context;
        connect.address = "127.0.0.1";
        connect.port = server_port;
        connect.path = "/";
        connect.host = connect.address;
        connect.origin = connect.address;
        connect.protocol = "echo";
        if (!lws_client_connect_via_info(&connect)) { atomic_fetch_add(&failures, 1); atomic_store(&client->done, 1); }
        /* The next context is created while this one is serviced and destroyed; at most two behind. */
        if (previous[i % 2]) pthread_join(previous[i % 2], NULL);
        pthread_create(&previous[i % 2], NULL, service_and_destroy, client);
    }
    for (int k = 0; k < 2; k++) if (previous[k]) pthread_join(previous[k], NULL);
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    long iterations = argc > 2 ? atol(argv[2]) : 500;
    lws_set_log_level(LLL_ERR, NULL);

    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = 0;
    info.iface = "127.0.0.1";
    info.protocols = server_protocols;
    info.gid = -1;
    info.uid = -1;
    info.options = LWS_SERVER_OPTION_DISABLE_IPV6;
    struct lws_context *server = lws_create_context(&info);
    if (!server) { fprintf(stderr, "no server context\n"); return 2; }
    server_port = lws_get_vhost_listen_port(lws_get_vhost_by_name(server, "default"));
    pthread_t service;
    pthread_create(&service, NULL, server_thread, server);

    pthread_t workers[64];
    if (threads > 64) threads = 64;
    for (int t = 0; t < threads; t++) pthread_create(&workers[t], NULL, worker, (void *)iterations);
    for (int t = 0; t < threads; t++) pthread_join(workers[t], NULL);

    atomic_store(&stop_server, 1);
    lws_cancel_service(server);
    pthread_join(service, NULL);
    lws_context_destroy(server);
    printf("%ld contexts, %ld echoes, %ld failures\n", atomic_load(&contexts), atomic_load(&echoes), atomic_load(&failures));
    return atomic_load(&echoes) > 0 ? 0 : 1;
}
