public import Foundation

/// An item's access control as Apple's `SecAccessControl` sets it (`kSecAttrAccessControl`): its accessibility
/// (stored as the item's `kSecAttrAccessible`) and Apple's constraint flags.
///
/// There is no user interface, passcode or biometry here. A constraint a password satisfies (user presence, the
/// device passcode, an application password) is kept only in a keychain that has a password, and reading the secret
/// takes that password as the proof of the user (``ItemAuthentication``); elsewhere the add or update is refused
/// (`authFailed`), as Apple refuses to store such items on a device without a passcode. A constraint only biometry or
/// a companion device satisfies is refused (`unimplemented`).
public struct ItemAccessControl: Codable, Sendable, Hashable {
    /// Apple's `SecAccessControlCreateFlags` bits.
    public enum Flag {
        public static let userPresence: UInt = 1 << 0
        public static let biometryAny: UInt = 1 << 1
        public static let biometryCurrentSet: UInt = 1 << 3
        public static let devicePasscode: UInt = 1 << 4
        public static let companion: UInt = 1 << 5
        public static let or: UInt = 1 << 14
        public static let and: UInt = 1 << 15
        public static let privateKeyUsage: UInt = 1 << 30
        public static let applicationPassword: UInt = 1 << 31
        /// Every bit Apple defines.
        static let known: UInt = userPresence | biometryAny | biometryCurrentSet | devicePasscode | companion | or | and
            | privateKeyUsage | applicationPassword
        /// The bits that ask for the user.
        static let user: UInt = userPresence | biometryAny | biometryCurrentSet | devicePasscode | companion | applicationPassword
        /// The constraints a password satisfies here (user presence falls back to it, as on a Mac without biometry).
        static let byPassword: UInt = userPresence | devicePasscode | applicationPassword
    }

    public var protection: Accessibility
    public var flags: UInt

    public init(protection: Accessibility, flags: UInt) {
        self.protection = protection
        self.flags = flags
    }

    /// Whether a constraint asks for the user (and so needs a password-locked keychain here).
    public var requiresUser: Bool { flags & Flag.user != 0 }

    /// Whether the access control among an item's `attributes` (`kSecAttrAccessControl`, encoded) asks for the user;
    /// false without one, or for one that does not decode.
    package static func asksForUser(in attributes: ItemAttributes) -> Bool {
        guard case .data(let encoded)? = attributes[.accessControl], let control = try? ItemAccessControl(encoded: encoded) else {
            return false
        }
        return control.requiresUser
    }

    /// Whether this platform can satisfy the constraints: biometry and a companion device cannot be had, so a
    /// constraint that needs one of them (alone, or with `and`) cannot; one that allows an alternative (`or`) a
    /// password satisfies can.
    public var isSatisfiable: Bool {
        let user = flags & Flag.user
        return flags & Flag.or != 0 ? user == 0 || user & Flag.byPassword != 0 : user & ~Flag.byPassword == 0
    }

    private enum CodingKeys: String, CodingKey { case protection, flags }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let code = try container.decode(String.self, forKey: .protection)
        guard let protection = Accessibility(rawValue: code) else {
            throw DecodingError.dataCorruptedError(forKey: .protection, in: container, debugDescription: "unknown accessibility")
        }
        self.protection = protection
        flags = try container.decode(UInt.self, forKey: .flags)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(protection.rawValue, forKey: .protection)
        try container.encode(flags, forKey: .flags)
    }

    /// The value as stored and as it travels in the `kSecAttrAccessControl` attribute.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try encoder.encode(self)
    }

    /// A value from ``encoded()``.
    /// - Throws: ``KeychainError`` `.parameter` for anything else, or flags Apple does not define.
    public init(encoded data: Data) throws {
        guard data.count <= 4096, let value = try? JSONDecoder().decode(ItemAccessControl.self, from: data),
            value.flags & ~Flag.known == 0
        else { throw KeychainError(.parameter, "kSecAttrAccessControl is not an access control") }
        self = value
    }
}
