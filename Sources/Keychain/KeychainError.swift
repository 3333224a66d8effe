/// An error of the keychain store. Equal by code; the Apple-compatible surface maps codes to `OSStatus`.
/// Reasons name what was wrong, never a secret or a searchable value.
public struct KeychainError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate let name: String
        /// A secret could not be decrypted or authenticated (`errSecDecode`).
        public static let decode = Code(name: "decode")
        /// The master key file is missing, malformed or readable by others.
        public static let masterKey = Code(name: "masterKey")
        /// A file could not be created, read or written; ``KeychainError/errno`` says why.
        public static let io = Code(name: "io")
        /// The database failed (``KeychainError/sqliteCode``).
        public static let database = Code(name: "database")
        /// An item with the same unique attributes exists (`errSecDuplicateItem`).
        public static let duplicateItem = Code(name: "duplicateItem")
        /// No item matched (`errSecItemNotFound`).
        public static let itemNotFound = Code(name: "itemNotFound")
        /// A malformed query or attribute: unknown key, wrong value type, conflicting options (`errSecParam`).
        public static let parameter = Code(name: "parameter")
        /// An attribute the item's class does not have (`errSecNoSuchAttr`).
        public static let noSuchAttribute = Code(name: "noSuchAttribute")
        /// A `kSecClass` value that names no item class (`errSecNoSuchClass`).
        public static let noSuchClass = Code(name: "noSuchClass")
        /// An access group the caller is not a member of (`errSecMissingEntitlement`).
        public static let missingEntitlement = Code(name: "missingEntitlement")
        /// A known option this implementation does not provide (`errSecUnimplemented`).
        public static let unimplemented = Code(name: "unimplemented")
        public var description: String { name }
    }

    public let code: Code
    public let reason: String
    public let errno: Int32?
    public let sqliteCode: Int32?

    public init(_ code: Code, _ reason: String, errno: Int32? = nil, sqliteCode: Int32? = nil) {
        self.code = code
        self.reason = reason
        self.errno = errno
        self.sqliteCode = sqliteCode
    }

    public static func == (lhs: KeychainError, rhs: KeychainError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public var description: String { "KeychainError.\(code): \(reason)" }
}
