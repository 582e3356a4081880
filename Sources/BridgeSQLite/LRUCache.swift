/// A least-recently-used map bounded by a total cost (bytes), with O(1) get, put and removal.
struct LRUCache<Key: Hashable, Value> {
    private struct Node {
        var value: Value
        var cost: Int
        var newer: Key?
        var older: Key?
    }

    private var nodes: [Key: Node] = [:]
    private var newest: Key?
    private var oldest: Key?
    /// The cost bound.
    let capacity: Int
    /// The summed cost of the values held.
    private(set) var totalCost = 0

    init(capacity: Int) { self.capacity = capacity }

    /// How many values are held.
    var count: Int { nodes.count }

    /// The value for `key`, which becomes the most recently used.
    mutating func get(_ key: Key) -> Value? {
        guard let node = nodes[key] else { return nil }
        unlink(key)
        linkNewest(key)
        return node.value
    }

    /// Inserts or replaces `key`, then drops the least recently used values beyond the capacity.
    /// Returns how many values were dropped. A value costlier than the capacity is not kept.
    @discardableResult
    mutating func put(_ key: Key, _ value: Value, cost: Int) -> Int {
        remove(key)
        guard cost <= capacity else { return 0 }
        nodes[key] = Node(value: value, cost: cost)
        linkNewest(key)
        totalCost += cost
        var dropped = 0
        while totalCost > capacity, let victim = oldest {
            remove(victim)
            dropped += 1
        }
        return dropped
    }

    /// Removes `key` if present.
    mutating func remove(_ key: Key) {
        guard let node = nodes[key] else { return }
        unlink(key)
        nodes.removeValue(forKey: key)
        totalCost -= node.cost
    }

    /// Removes everything.
    mutating func removeAll() {
        nodes = [:]
        newest = nil
        oldest = nil
        totalCost = 0
    }

    private mutating func unlink(_ key: Key) {
        guard let node = nodes[key] else { return }
        if let newer = node.newer { nodes[newer]?.older = node.older } else { newest = node.older }
        if let older = node.older { nodes[older]?.newer = node.newer } else { oldest = node.newer }
        nodes[key]?.newer = nil
        nodes[key]?.older = nil
    }

    private mutating func linkNewest(_ key: Key) {
        nodes[key]?.older = newest
        nodes[key]?.newer = nil
        if let newest { nodes[newest]?.newer = key }
        newest = key
        if oldest == nil { oldest = key }
    }
}
