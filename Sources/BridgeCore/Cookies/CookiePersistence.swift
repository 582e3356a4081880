/// Where a jar keeps its persistent cookies across restarts (the broker's SQLite database).
///
/// The jar calls it under its own lock, in the order changes happen; each `save` must be atomic
/// (one transaction), so a crash leaves either the old or the new state.
public protocol CookiePersistence: Sendable {
    /// Every cookie stored, expired ones included (the jar drops those).
    func loadCookies() throws -> [Cookie]
    /// Writes persistent cookies (insert or replace by key) and removes cookies by key, atomically.
    func save(upserting cookies: [Cookie], deleting keys: [Cookie.Key]) throws
    /// Removes every stored cookie.
    func deleteAll() throws
}
