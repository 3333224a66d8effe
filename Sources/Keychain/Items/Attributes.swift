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
public struct AttributeKey: RawRepresentable, Hashable, Sendable, Comparable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public static func < (lhs: AttributeKey, rhs: AttributeKey) -> Bool { lhs.rawValue < rhs.rawValue }
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
/// lock, so every class behaves as "always" (see the README's threat model).
public enum Accessibility: String, Sendable, CaseIterable {
    case whenUnlocked = "ak"
    case afterFirstUnlock = "ck"
    case always = "dk"
    case whenPasscodeSetThisDeviceOnly = "akpu"
    case whenUnlockedThisDeviceOnly = "aku"
    case afterFirstUnlockThisDeviceOnly = "cku"
    case alwaysThisDeviceOnly = "dku"
}
