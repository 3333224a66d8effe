public import Foundation

/// The kind of a keychain item, with Apple's class codes as raw values (`kSecClassGenericPassword` is "genp").
public enum ItemClass: String, Sendable, CaseIterable, Codable {
    case genericPassword = "genp"
    case internetPassword = "inet"
    case certificate = "cert"
    case key = "keys"
    /// A certificate and its private key, stored as two items and paired at query time.
    case identity = "idnt"
}

/// An attribute name, with Apple's attribute codes as raw values (`kSecAttrAccount` is "acct").
///
/// Keys are equal when their names' UTF-8 bytes are (a keychain attribute is a tag, not text: no Unicode
/// equivalence). They are hashed and compared as the code packed into an integer (every Apple code is four ASCII
/// characters): the store's planner looks each query attribute up several times, and hashing the string was a
/// tenth of a find. A name longer than eight bytes, or not ASCII, is hashed and compared as its bytes.
public struct AttributeKey: RawRepresentable, Hashable, Sendable, Comparable, Codable, CustomStringConvertible {
    public let rawValue: String
    /// The name's UTF-8 bytes in an integer, first byte lowest, with the top bit set, when it is ASCII without NUL
    /// and at most 8 bytes long; else 0.
    private let packed: UInt64

    public init(rawValue: String) {
        self.rawValue = rawValue
        packed = Self.pack(rawValue)
    }

    public init(_ rawValue: String) { self.init(rawValue: rawValue) }

    private static func pack(_ name: String) -> UInt64 {
        guard name.utf8.count <= 8 else { return 0 }
        // The top bit (free: an ASCII byte's high bit is clear) tells a packed name, the empty one included, from 0.
        var packed: UInt64 = 1 << 63
        var shift: UInt64 = 0
        for byte in name.utf8 {
            guard byte != 0, byte < 0x80 else { return 0 }
            packed |= UInt64(byte) << shift
            shift += 8
        }
        return packed
    }

    public static func == (lhs: AttributeKey, rhs: AttributeKey) -> Bool {
        if lhs.packed != 0 || rhs.packed != 0 { return lhs.packed == rhs.packed }
        return lhs.rawValue.utf8.elementsEqual(rhs.rawValue.utf8)
    }

    public func hash(into hasher: inout Hasher) {
        if packed != 0 {
            hasher.combine(packed)
            return
        }
        hasher.combine(rawValue.utf8.count)
        for byte in rawValue.utf8 { hasher.combine(byte) }
    }

    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public static func < (lhs: AttributeKey, rhs: AttributeKey) -> Bool { lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8) }
    public var description: String { rawValue }

    // Every class.
    public static let accessible = AttributeKey("pdmn")
    public static let accessGroup = AttributeKey("agrp")
    public static let synchronizable = AttributeKey("sync")
    public static let creationDate = AttributeKey("cdat")
    public static let modificationDate = AttributeKey("mdat")
    public static let label = AttributeKey("labl")
    /// `kSecAttrAccess`: the item's access control list, an encoded ``ItemAccess`` (stored apart, sealed; set on
    /// add or by an update the list allows; not searchable).
    public static let access = AttributeKey("acls")
    /// `kSecAttrAccessControl`: an encoded ``ItemAccessControl`` (its protection is also the item's `accessible`).
    public static let accessControl = AttributeKey("accc")
    // Passwords.
    public static let description_ = AttributeKey("desc")
    public static let comment = AttributeKey("icmt")
    public static let creator = AttributeKey("crtr")
    public static let type = AttributeKey("type")
    public static let isInvisible = AttributeKey("invi")
    public static let isNegative = AttributeKey("nega")
    public static let account = AttributeKey("acct")
    public static let service = AttributeKey("svce")
    public static let generic = AttributeKey("gena")
    public static let securityDomain = AttributeKey("sdmn")
    public static let server = AttributeKey("srvr")
    public static let `protocol` = AttributeKey("ptcl")
    public static let authenticationType = AttributeKey("atyp")
    public static let port = AttributeKey("port")
    public static let path = AttributeKey("path")
    // Certificates.
    public static let certificateType = AttributeKey("ctyp")
    public static let certificateEncoding = AttributeKey("cenc")
    public static let subject = AttributeKey("subj")
    public static let issuer = AttributeKey("issr")
    public static let serialNumber = AttributeKey("slnr")
    public static let subjectKeyID = AttributeKey("skid")
    public static let publicKeyHash = AttributeKey("pkhh")
    // Keys.
    public static let keyClass = AttributeKey("kcls")
    public static let applicationLabel = AttributeKey("klbl")
    public static let applicationTag = AttributeKey("atag")
    public static let keyType = AttributeKey("type")
    public static let keySizeInBits = AttributeKey("bsiz")
    public static let effectiveKeySize = AttributeKey("esiz")
    public static let isPermanent = AttributeKey("perm")
    public static let isPrivate = AttributeKey("priv")
    public static let isModifiable = AttributeKey("modi")
    public static let startDate = AttributeKey("sdat")
    public static let endDate = AttributeKey("edat")
    public static let isSensitive = AttributeKey("sens")
    public static let wasAlwaysSensitive = AttributeKey("asen")
    public static let isExtractable = AttributeKey("extr")
    public static let wasNeverExtractable = AttributeKey("next")
    public static let canEncrypt = AttributeKey("encr")
    public static let canDecrypt = AttributeKey("decr")
    public static let canDerive = AttributeKey("drve")
    public static let canSign = AttributeKey("sign")
    public static let canVerify = AttributeKey("vrfy")
    public static let canSignRecover = AttributeKey("snrc")
    public static let canVerifyRecover = AttributeKey("vyrc")
    public static let canWrap = AttributeKey("wrap")
    public static let canUnwrap = AttributeKey("unwp")
    /// `kSecAttrTokenID`: where a key lives when not in the item (``KeychainWire/heldKeyTokenID``: the keychain
    /// service holds it).
    public static let tokenID = AttributeKey("tkid")
}

/// An attribute value, typed as the attribute's schema says.
public enum AttributeValue: Hashable, Sendable, Codable {
    case string(String)
    case data(Data)
    case number(Int64)
    case bool(Bool)
    case date(Date)
}

public typealias ItemAttributes = [AttributeKey: AttributeValue]

/// The values `kSecAttrAccessible` takes (Apple's codes). Stored and returned; on Linux there is no device
/// lock, so every class behaves as "always" (see docs/security.md).
public enum Accessibility: String, Sendable, CaseIterable {
    case whenUnlocked = "ak"
    case afterFirstUnlock = "ck"
    case always = "dk"
    case whenPasscodeSetThisDeviceOnly = "akpu"
    case whenUnlockedThisDeviceOnly = "aku"
    case afterFirstUnlockThisDeviceOnly = "cku"
    case alwaysThisDeviceOnly = "dku"
}
