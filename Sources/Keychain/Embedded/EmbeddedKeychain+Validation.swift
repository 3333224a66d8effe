extension EmbeddedKeychain {
    /// Checks every attribute against the class's schema and coerces it to the attribute's type.
    func validate(_ attributes: ItemAttributes, for schema: ItemSchema) throws -> ItemAttributes {
        var seen = SeenKeys()
        return try validate(attributes, for: schema, noting: &seen)
    }

    /// What the query planner asks of a query's attributes, learned in the validation's one pass over them: each
    /// lookup in the dictionary hashes its key (SipHash), and the planner's seven lookups for these were a twentieth
    /// of a find.
    struct SeenKeys {
        /// `kSecAttrAccess` or `kSecAttrAccessControl`.
        var access = false
        var synchronizable = false
        var accessGroup = false
        /// How many of the class's uniqueness attributes.
        var uniqueness = 0
    }

    func validate(_ attributes: ItemAttributes, for schema: ItemSchema, noting seen: inout SeenKeys) throws -> ItemAttributes {
        // The caller's dictionary, shared until a value must change type (most never do).
        var valid = attributes
        for (key, value) in attributes {
            switch key {
            case .access, .accessControl: seen.access = true
            case .synchronizable: seen.synchronizable = true
            case .accessGroup: seen.accessGroup = true
            default: if schema.uniqueness.contains(key) { seen.uniqueness += 1 }
            }
            guard let kind = schema.attributes[key] else {
                if ItemSchema.isKnown(key) {
                    throw KeychainError(.noSuchAttribute, "the \(schema.itemClass.rawValue) class has no attribute \(key)")
                }
                throw KeychainError(.parameter, "unknown attribute \(key)")
            }
            guard let coerced = ItemSchema.coerce(value, to: kind) else {
                throw KeychainError(.parameter, "attribute \(key) has a value of the wrong type")
            }
            if key == .accessible, case .string(let code) = coerced, Accessibility(rawValue: code) == nil {
                throw KeychainError(.parameter, "unknown kSecAttrAccessible value")
            }
            if key == .accessGroup, case .string(let group) = coerced, group.isEmpty {
                throw KeychainError(.parameter, "an access group cannot be empty")
            }
            if !ItemSchema.isOfKind(value, kind) { valid[key] = coerced }
        }
        return valid
    }

    /// Applies `kSecAttrAccessControl` among `attributes`: checks it, sets the accessibility it carries (giving a
    /// different `kSecAttrAccessible` beside it is `.parameter`), refuses a constraint this platform cannot satisfy
    /// (`.unimplemented`: biometry, a companion device) and one that asks for the user where the keychain has no
    /// password to stand for the user (`.authFailed`).
    func applyAccessControl(_ attributes: inout ItemAttributes) throws {
        guard let value = attributes[.accessControl] else { return }
        guard case .data(let data) = value else { throw KeychainError(.parameter, "kSecAttrAccessControl is not an access control") }
        let control = try ItemAccessControl(encoded: data)
        let protection = AttributeValue.string(control.protection.rawValue)
        if let given = attributes[.accessible], given != protection {
            throw KeychainError(.parameter, "kSecAttrAccessible and kSecAttrAccessControl name different accessibilities")
        }
        attributes[.accessible] = protection
        guard control.isSatisfiable else {
            throw KeychainError(.unimplemented, "the access control needs biometry or a companion device, which this platform does not have")
        }
        if control.requiresUser, !(try lockStatus().passwordLocked) {
            throw KeychainError(
                .authFailed, "the access control asks for the user, which only a keychain with a password can stand for here")
        }
    }

    /// The group an item goes to: the named one if the caller is in it, else the caller's first.
    func group(named value: AttributeValue?) throws -> String {
        guard case .string(let group) = value else { return accessGroups[0] }
        guard accessGroups.contains(group) else {
            throw KeychainError(.missingEntitlement, "the caller is not in the access group it named")
        }
        return group
    }
}

extension ItemSchema {
    private static let known: Set<AttributeKey> = Set(ItemClass.allCases.flatMap { of($0).attributes.keys })
    static func isKnown(_ key: AttributeKey) -> Bool { known.contains(key) }
}
