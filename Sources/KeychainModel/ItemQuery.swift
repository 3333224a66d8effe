public import Foundation

/// Which items a query matches with respect to `kSecAttrSynchronizable`.
public enum SynchronizableMatch: Sendable, Hashable {
    /// Only items that are not synchronizable (Apple's default when the query does not mention it).
    case no
    case yes
    /// `kSecAttrSynchronizableAny`: both.
    case any
}

/// How many items a query returns (`kSecMatchLimit`).
public enum MatchLimit: Sendable, Hashable {
    case one
    case all
    case count(Int)

    public var maximum: Int? {
        switch self {
        case .one: 1
        case .all: nil
        case .count(let count): count
        }
    }
}

/// What a query returns for each item (`kSecReturnData`, `kSecReturnAttributes`, `kSecReturnRef`,
/// `kSecReturnPersistentRef`).
public struct ReturnOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let data = ReturnOptions(rawValue: 1)
    public static let attributes = ReturnOptions(rawValue: 2)
    public static let reference = ReturnOptions(rawValue: 4)
    public static let persistentReference = ReturnOptions(rawValue: 8)
}

/// A search: the class, the attribute values to match, and the options of Apple's query dictionary.
public struct ItemQuery: Sendable, Hashable {
    /// `nil` only when ``persistentReference`` names the item.
    public var itemClass: ItemClass?
    /// Attribute values an item must have (all of them). `accessGroup` narrows the search to one of the
    /// caller's groups.
    public var matching: ItemAttributes
    public var synchronizable: SynchronizableMatch
    public var limit: MatchLimit
    /// `kSecMatchCaseInsensitive`: string attributes compare without regard to case (searches only).
    public var caseInsensitive: Bool
    /// `kSecValuePersistentRef`: the one item this reference names.
    public var persistentReference: Data?
    public var returning: ReturnOptions
    /// How a secret whose access control asks for the user is authenticated (nil: as ``ItemAuthentication``'s
    /// defaults: no proof, the read refused).
    public var authentication: ItemAuthentication?

    public init(
        _ itemClass: ItemClass?, matching: ItemAttributes = [:], synchronizable: SynchronizableMatch = .no,
        limit: MatchLimit = .one, caseInsensitive: Bool = false, persistentReference: Data? = nil,
        returning: ReturnOptions = [], authentication: ItemAuthentication? = nil
    ) {
        self.authentication = authentication
        self.itemClass = itemClass
        self.matching = matching
        self.synchronizable = synchronizable
        self.limit = limit
        self.caseInsensitive = caseInsensitive
        self.persistentReference = persistentReference
        self.returning = returning
    }
}

/// One item as a query returns it: only what was asked for is filled in.
public struct KeychainItem: Sendable, Hashable {
    public let itemClass: ItemClass
    public var attributes: ItemAttributes?
    public var data: Data?
    public var persistentReference: Data?
    /// For an identity: the certificate's data and the private key's data (the store keeps them opaque).
    public var identityKeyData: Data?
}

extension KeychainItem {
    /// An item as a caller describes one (the store makes its own).
    public init(
        itemClass: ItemClass, attributes: ItemAttributes? = nil, data: Data? = nil, persistentReference: Data? = nil,
        identityKeyData: Data? = nil, describing: Void = ()
    ) {
        self.itemClass = itemClass
        self.attributes = attributes
        self.data = data
        self.persistentReference = persistentReference
        self.identityKeyData = identityKeyData
    }
}

/// What a restore did: how many items came back, and which of them kept a secret this keychain's master key
/// cannot open (restored with their attributes; reading their data fails with ``KeychainError/Code/decode``).
public struct RestoreReport: Sendable, Hashable {
    public var restored: Int
    public var unreadableSecrets: [KeychainItem]

    package init(restored: Int, unreadableSecrets: [KeychainItem]) {
        self.restored = restored
        self.unreadableSecrets = unreadableSecrets
    }
}

/// An item for `KeychainStore.add(_:unlessAnyMatches:)`: its class (not `.identity`), attributes and secret.
public struct NewItem: Sendable {
    public let itemClass: ItemClass
    public let attributes: ItemAttributes
    public let data: Data?

    public init(_ itemClass: ItemClass, attributes: ItemAttributes, data: Data? = nil) {
        self.itemClass = itemClass
        self.attributes = attributes
        self.data = data
    }
}
