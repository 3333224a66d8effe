extension EmbeddedKeychain {
    /// The items matching `query`, at most its limit, each with what `query.returning` asks for.
    /// - Throws: ``KeychainError``: `.itemNotFound` when nothing matches, `.missingEntitlement` for a group the
    ///   caller lacks, `.noSuchAttribute`, `.parameter`, `.decode` for a secret that does not authenticate;
    ///   for a secret whose access control asks for the user, `.interactionNotAllowed` without the proof
    ///   (``ItemQuery/authentication``) and `.authFailed` for a wrong password.
    public func find(_ query: ItemQuery) throws -> [KeychainItem] {
        let needSecret = query.returning.contains(.data) || query.returning.contains(.reference)
        let passwordLocked = secrets != nil
        let items = try find(query, needSecret: needSecret)
        // A password another store gave the keychain is noticed when a secret sealed under it is opened: if that
        // happened in this read, the read ran without the proof its items may ask for, and runs again with it.
        if needSecret, !passwordLocked, secrets != nil { return try find(query, needSecret: needSecret) }
        return items
    }

    private func find(_ query: ItemQuery, needSecret: Bool) throws -> [KeychainItem] {
        // Secrets whose access control asks for the user are returned only with the proof (a keychain with a
        // password only): such an item is read with its attributes, which the unique lookup does not read.
        let proof = userProof(for: query, needSecret: needSecret)
        let plan = try plan(query)
        if let lookup = UniqueLookup(plan, returning: query.returning) {
            switch try readStatement({ try self.find(lookup, in: $0, proving: proof != nil) }) {
            case .found(let item): return [item]
            case .notFound: throw KeychainError(.itemNotFound, "no item matches the query")
            case .asksForUser: break
            }
        }
        // An identity is a join over several statements: those need the explicit transaction.
        let body = { (database: Database) throws -> [KeychainItem] in
            let items = try self.items(matching: plan, in: database, needSecret: needSecret, proof: proof)
            guard !items.isEmpty else { throw KeychainError(.itemNotFound, "no item matches the query") }
            return try items.map { try self.result(for: $0, returning: query.returning) }
        }
        return plan.itemClass == .identity ? try read(body) : try readStatement(body)
    }
}
