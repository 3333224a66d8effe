extension KeychainStore {
    /// The items matching `query`, at most its limit, each with what `query.returning` asks for.
    /// - Throws: ``KeychainError``: `.itemNotFound` when nothing matches, `.missingEntitlement` for a group the
    ///   caller lacks, `.noSuchAttribute`, `.parameter`, `.decode` for a secret that does not authenticate.
    public func find(_ query: ItemQuery) throws -> [KeychainItem] {
        if let service {
            guard case .items(let items) = try service.call(.find(query)) else { throw Self.unexpectedAnswer }
            return items
        }
        let plan = try plan(query)
        if let lookup = UniqueLookup(plan, returning: query.returning) {
            guard let item = try readStatement({ try self.find(lookup, in: $0) }) else {
                throw KeychainError(.itemNotFound, "no item matches the query")
            }
            return [item]
        }
        // An identity is a join over several statements: those need the explicit transaction.
        let body = { (database: Database) throws -> [KeychainItem] in
            let items = try self.items(matching: plan, in: database, needSecret: query.returning.contains(.data) || query.returning.contains(.reference))
            guard !items.isEmpty else { throw KeychainError(.itemNotFound, "no item matches the query") }
            return try items.map { try self.result(for: $0, returning: query.returning) }
        }
        return plan.itemClass == .identity ? try read(body) : try readStatement(body)
    }
}
