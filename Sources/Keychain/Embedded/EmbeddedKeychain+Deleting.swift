extension EmbeddedKeychain {
    /// Deletes every item matching `query` (an identity: its certificate and its private key).
    /// - Returns: how many items (identities count once) were deleted.
    /// - Throws: ``KeychainError`` `.itemNotFound` when nothing matches, `.parameter` for return options or
    ///   a case-insensitive query.
    @discardableResult
    public func delete(_ query: ItemQuery) throws -> Int {
        guard !query.caseInsensitive else {
            throw KeychainError(.parameter, "kSecMatchCaseInsensitive is not supported by delete")
        }
        guard query.returning.isEmpty else { throw KeychainError(.parameter, "a delete returns nothing") }
        var all = query
        all.limit = .all
        let plan = try plan(all)
        let (count, reference) = try write { database in
            let items = try self.items(matching: plan, in: database, needSecret: false)
            guard !items.isEmpty else { throw KeychainError(.itemNotFound, "no item matches the query") }
            let reference = KeychainEvents.isListening && items.count == 1 ? try self.reference(for: items[0]) : nil
            for item in items { try require(.delete, by: item.access) }
            for item in items {
                try database.query("DELETE FROM item WHERE id = ?1", [.integer(item.id)])
                if let key = item.identityKey { try database.query("DELETE FROM item WHERE id = ?1", [.integer(key.id)]) }
            }
            return (items.count, reference)
        }
        scheduleRemovalOfDeletedCopies()
        KeychainEvents.post(KeychainEvent(kind: .delete, path: path, itemClass: plan.itemClass, persistentReference: reference))
        return count
    }
}
