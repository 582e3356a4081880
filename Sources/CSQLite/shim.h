#ifndef BRIDGE_CSQLITE_SHIM_H
#define BRIDGE_CSQLITE_SHIM_H
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro Swift cannot import: the binding needs it to make SQLite
// copy bound text and blobs before the Swift buffer goes away.
static inline sqlite3_destructor_type bridge_sqlite_transient(void) { return SQLITE_TRANSIENT; }

static inline int bridge_sqlite_config_log(void) { return SQLITE_OK; }
#endif
