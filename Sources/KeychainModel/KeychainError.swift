public import SecurityBase
/// An error of the keychain store. Equal by code; the Apple-compatible surface maps codes to `OSStatus`.
/// Reasons name what was wrong, never a secret or a searchable value.
public struct KeychainError: CodedError {
    public typealias Code = ErrorCode<KeychainError>

    public let code: Code
    public let reason: String
    public let location: ErrorLocation
    public let errno: Int32?
    public let sqliteCode: Int32?

    public init(_ code: Code, _ reason: String, errno: Int32? = nil, sqliteCode: Int32? = nil, file: StaticString = #fileID, line: UInt = #line) {
        location = ErrorLocation(fileID: file, line: line)
        self.code = code
        self.reason = reason
        self.errno = errno
        self.sqliteCode = sqliteCode
    }
}

extension ErrorCode where Domain == KeychainError {
    /// A secret could not be decrypted or authenticated (`errSecDecode`).
    public static let decode = Self(name: "decode")
    /// The master key file is missing, malformed or readable by others.
    public static let masterKey = Self(name: "masterKey")
    /// A file could not be created, read or written; ``KeychainError/errno`` says why.
    public static let io = Self(name: "io")
    /// The database failed (``KeychainError/sqliteCode``).
    public static let database = Self(name: "database")
    /// An item with the same unique attributes exists (`errSecDuplicateItem`).
    public static let duplicateItem = Self(name: "duplicateItem")
    /// No item matched (`errSecItemNotFound`).
    public static let itemNotFound = Self(name: "itemNotFound")
    /// A malformed query or attribute: unknown key, wrong value type, conflicting options (`errSecParam`).
    public static let parameter = Self(name: "parameter")
    /// An attribute the item's class does not have (`errSecNoSuchAttr`).
    public static let noSuchAttribute = Self(name: "noSuchAttribute")
    /// A `kSecClass` value that names no item class (`errSecNoSuchClass`).
    public static let noSuchClass = Self(name: "noSuchClass")
    /// An access group the caller is not a member of (`errSecMissingEntitlement`).
    public static let missingEntitlement = Self(name: "missingEntitlement")
    /// A password that does not unlock the keychain (`errSecAuthFailed`).
    public static let authFailed = Self(name: "authFailed")
    /// The keychain is locked and a library cannot ask for its password (`errSecInteractionNotAllowed`).
    public static let interactionNotAllowed = Self(name: "interactionNotAllowed")
    /// An item without an access control list was asked for its list (`errSecNoAccessForItem`).
    public static let noAccessForItem = Self(name: "noAccessForItem")
    /// A known option this implementation does not provide (`errSecUnimplemented`).
    public static let unimplemented = Self(name: "unimplemented")
    /// The file system has no room for the change (`errSecDiskFull`); nothing was changed.
    public static let diskFull = Self(name: "diskFull")
    /// The keychain's files cannot be written (a read-only file system or file: `errSecReadOnly`); reads go on.
    public static let readOnly = Self(name: "readOnly")
}
