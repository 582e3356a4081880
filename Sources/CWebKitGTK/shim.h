#ifndef BRIDGE_CWEBKITGTK_SHIM_H
#define BRIDGE_CWEBKITGTK_SHIM_H
#include <gtk/gtk.h>
#include <webkit/webkit.h>
#include <jsc/jsc.h>

// Macros and variadic functions Swift cannot import, as functions it can: the whole C surface
// BridgeWebView uses beyond WebKitGTK's plain functions.

/// g_signal_connect is a macro; callbacks are plain C functions with a user-data pointer.
static inline gulong bridge_signal_connect(gpointer instance, const char *signal, GCallback callback, gpointer data) {
    return g_signal_connect_data(instance, signal, callback, data, NULL, (GConnectFlags)0);
}

/// A web view with its own network session and user content manager (construct-only properties).
static inline WebKitWebView *bridge_web_view_new(WebKitNetworkSession *session, WebKitUserContentManager *manager) {
    return WEBKIT_WEB_VIEW(g_object_new(WEBKIT_TYPE_WEB_VIEW, "network-session", session,
                                        "user-content-manager", manager, NULL));
}

/// A web view that shares `related`'s web process and network session (two views, one cache).
static inline WebKitWebView *bridge_web_view_new_related(WebKitWebView *related, WebKitUserContentManager *manager) {
    return WEBKIT_WEB_VIEW(g_object_new(WEBKIT_TYPE_WEB_VIEW, "related-view", related,
                                        "user-content-manager", manager, NULL));
}

static inline GtkWidget *bridge_widget(WebKitWebView *view) { return GTK_WIDGET(view); }
static inline GtkWindow *bridge_window(GtkWidget *widget) { return GTK_WINDOW(widget); }
static inline GtkBox *bridge_box(GtkWidget *widget) { return GTK_BOX(widget); }
static inline GtkProgressBar *bridge_progress_bar(GtkWidget *widget) { return GTK_PROGRESS_BAR(widget); }
static inline GObject *bridge_object(gpointer pointer) { return G_OBJECT(pointer); }
#endif
