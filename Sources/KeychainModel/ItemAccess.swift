public import Foundation

/// An item's access control list, as the desktop keychain has it (Apple's `SecAccess`): entries, each naming the
/// operations it authorizes and the applications trusted to do them without asking (nil: any application).
///
/// An operation is allowed when some entry authorizes it (or `any`) for the caller. There is no dialog to ask the
/// user instead: an application no entry trusts gets `.interactionNotAllowed` (`errSecInteractionNotAllowed`,
/// what macOS answers where it may not ask). An item without a list is open to every application that reaches it
/// (its access group decides), as on the iPhone.
public struct ItemAccess: Codable, Sendable, Hashable {
    /// What an entry authorizes, with Apple's `kSecACLAuthorization…` values.
    public enum Authorization: String, Codable, Sendable, CaseIterable {
        case any = "ACLAuthorizationAny"
        case logIn = "ACLAuthorizationLogin"
        case generateKey = "ACLAuthorizationGenKey"
        case delete = "ACLAuthorizationDelete"
        case derive = "ACLAuthorizationDerive"
        case encrypt = "ACLAuthorizationEncrypt"
        case decrypt = "ACLAuthorizationDecrypt"
        case exportWrapped = "ACLAuthorizationExportWrapped"
        case exportClear = "ACLAuthorizationExportClear"
        case importWrapped = "ACLAuthorizationImportWrapped"
        case importClear = "ACLAuthorizationImportClear"
        case sign = "ACLAuthorizationSign"
        case verify = "ACLAuthorizationVerify"
        case mac = "ACLAuthorizationMAC"
        case macVerify = "ACLAuthorizationMACVerify"
        case changeACL = "ACLAuthorizationChangeACL"
        case changeOwner = "ACLAuthorizationChangeOwner"
        case integrity = "ACLAuthorizationIntegrity"
        case partitionID = "ACLAuthorizationPartitionID"

        /// What the operation does, for messages ("read the secret").
        package var verb: String {
            switch self {
            case .decrypt, .exportClear: "read the secret"
            case .encrypt: "change the item"
            case .delete: "delete the item"
            case .changeACL, .changeOwner: "change the access control list"
            case .sign: "sign with the key"
            default: "do \(rawValue)"
            }
        }
    }

    /// An application as an ACL names it: by the SHA-256 of its executable (a modified binary is another
    /// application); the path says which file that was.
    public struct Application: Codable, Sendable, Hashable, CustomStringConvertible {
        public var path: String
        /// The SHA-256 of the executable's bytes, lower-case hex.
        public var sha256: String

        public init(path: String, sha256: String) {
            self.path = path
            self.sha256 = sha256.lowercased()
        }

        public var description: String { "\(path) (sha256:\(sha256.prefix(16))…)" }

    }

    /// One entry of the list (Apple's `SecACLRef`).
    public struct Entry: Codable, Sendable, Hashable {
        public var authorizations: [Authorization]
        /// The applications trusted for these operations; nil: any application; empty: none (an operation only
        /// this entry authorizes is then refused to everyone).
        public var applications: [Application]?
        public var description: String
        /// Apple's prompt selector bits, kept as given (there is no prompt to shape).
        public var promptSelector: UInt16

        public init(authorizations: [Authorization], applications: [Application]?, description: String = "", promptSelector: UInt16 = 0) {
            self.authorizations = authorizations
            self.applications = applications
            self.description = description
            self.promptSelector = promptSelector
        }

        func trusts(_ application: Application) -> Bool {
            applications.map { $0.contains { $0.sha256 == application.sha256 } } ?? true
        }
    }

    public var entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

    /// The list Apple's `SecAccessCreate` makes: anyone may change the secret (`encrypt`); `trusted` may read
    /// and use it and delete the item; only `owner` may change the list.
    public static func standard(description: String, trusted: [Application], owner: Application) -> ItemAccess {
        ItemAccess(entries: [
            Entry(authorizations: [.encrypt], applications: nil, description: description),
            Entry(
                authorizations: [.decrypt, .derive, .exportClear, .exportWrapped, .mac, .sign, .delete],
                applications: trusted, description: description),
            Entry(authorizations: [.changeACL], applications: [owner], description: description),
        ])
    }

    /// Whether `application` may do `operation` (an entry authorizing it, or `any`, trusts the application).
    public func allows(_ operation: Authorization, for application: Application) -> Bool {
        entries.contains { entry in
            (entry.authorizations.contains(operation) || entry.authorizations.contains(.any)) && entry.trusts(application)
        }
    }

    /// The list as stored and as it travels in the `kSecAttrAccess` attribute.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try encoder.encode(self)
    }

    /// A list from ``encoded()``.
    /// - Throws: ``KeychainError`` `.parameter` for anything else, or a list naming an application without a
    ///   64-digit SHA-256.
    public init(encoded data: Data) throws {
        guard data.count <= 1 << 20, let access = try? JSONDecoder().decode(ItemAccess.self, from: data) else {
            throw KeychainError(.parameter, "kSecAttrAccess is not an access control list")
        }
        for entry in access.entries {
            for application in entry.applications ?? [] {
                guard application.sha256.count == 64, application.sha256.allSatisfy(\.isHexDigit) else {
                    throw KeychainError(.parameter, "an access control list names an application without its SHA-256")
                }
            }
        }
        self = access
    }

    /// The application the keychain calls are made for: in the keychain service, the caller it identified for the
    /// request; nil means this process (``Application/current``).
    @TaskLocal public static var accessor: Application?
}
