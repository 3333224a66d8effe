import Foundation

/// What each class of item holds: its attributes with their types, and the attributes that make an item unique
/// (Apple's rules). The store validates every add, query and update against this table.
struct ItemSchema: Sendable {
    enum Kind: Sendable { case string, data, number, bool, date }

    let itemClass: ItemClass
    let attributes: [AttributeKey: Kind]
    /// The attributes whose values together must be unique (besides the access group, always part of it),
    /// sorted by code.
    let uniqueness: [AttributeKey]
    /// Whether `synchronizable` is part of uniqueness (passwords, as Apple's).
    let syncIsUnique: Bool

    init(itemClass: ItemClass, attributes: [AttributeKey: Kind], uniqueness: [AttributeKey], syncIsUnique: Bool) {
        self.itemClass = itemClass
        self.attributes = attributes
        self.uniqueness = uniqueness.sorted()
        self.syncIsUnique = syncIsUnique
    }

    static func of(_ itemClass: ItemClass) -> ItemSchema {
        switch itemClass {
        case .genericPassword: genericPassword
        case .internetPassword: internetPassword
        case .certificate: certificate
        case .key: key
        case .identity: identity
        }
    }

    private static let common: [AttributeKey: Kind] = [
        .accessible: .string, .accessGroup: .string, .synchronizable: .bool,
        .creationDate: .date, .modificationDate: .date, .label: .string, .access: .data,
        .accessControl: .data,
    ]
    private static let password = common.merging([
        .description_: .string, .comment: .string, .creator: .number, .type: .number,
        .isInvisible: .bool, .isNegative: .bool, .account: .string,
    ]) { $1 }

    static let genericPassword = ItemSchema(
        itemClass: .genericPassword,
        attributes: password.merging([.service: .string, .generic: .data]) { $1 },
        uniqueness: [.account, .service], syncIsUnique: true)

    static let internetPassword = ItemSchema(
        itemClass: .internetPassword,
        attributes: password.merging([
            .securityDomain: .string, .server: .string, .protocol: .string, .authenticationType: .string,
            .port: .number, .path: .string,
        ]) { $1 },
        uniqueness: [.account, .securityDomain, .server, .protocol, .authenticationType, .port, .path],
        syncIsUnique: true)

    static let certificate = ItemSchema(
        itemClass: .certificate,
        attributes: common.merging([
            .certificateType: .number, .certificateEncoding: .number, .subject: .data, .issuer: .data,
            .serialNumber: .data, .subjectKeyID: .data, .publicKeyHash: .data,
        ]) { $1 },
        uniqueness: [.certificateType, .issuer, .serialNumber], syncIsUnique: false)

    static let key = ItemSchema(
        itemClass: .key,
        attributes: common.merging(
            [
                .keyClass: .number, .applicationLabel: .data, .applicationTag: .data, .keyType: .number,
                .keySizeInBits: .number, .effectiveKeySize: .number, .creator: .number, .startDate: .date,
                .endDate: .date, .tokenID: .string,
            ].merging(
                [
                    AttributeKey.isPermanent, .isPrivate, .isModifiable, .isSensitive, .wasAlwaysSensitive,
                    .isExtractable, .wasNeverExtractable, .canEncrypt, .canDecrypt, .canDerive, .canSign,
                    .canVerify, .canSignRecover, .canVerifyRecover, .canWrap, .canUnwrap,
                ].map { ($0, Kind.bool) }
            ) { $1 }
        ) { $1 },
        uniqueness: [
            .keyClass, .label, .applicationLabel, .applicationTag, .keyType, .keySizeInBits, .effectiveKeySize,
            .startDate, .endDate,
        ],
        syncIsUnique: false)

    /// An identity is matched on its certificate's and its private key's attributes.
    static let identity = ItemSchema(
        itemClass: .identity, attributes: certificate.attributes.merging(key.attributes) { $1 }, uniqueness: [],
        syncIsUnique: false)

    /// The value an absent uniqueness attribute has (Apple's defaults: empty string, zero, empty data), so two
    /// items that both lack an account and a service collide. Dates have none: absent stays absent.
    static func defaultValue(_ kind: Kind) -> AttributeValue? {
        switch kind {
        case .string: .string("")
        case .data: .data(Data())
        case .number: .number(0)
        case .bool: .bool(false)
        case .date: nil
        }
    }

    /// Whether `value` already has the type of `kind` (then ``coerce(_:to:)`` returns it unchanged).
    static func isOfKind(_ value: AttributeValue, _ kind: Kind) -> Bool {
        switch (kind, value) {
        case (.string, .string), (.data, .data), (.number, .number), (.bool, .bool), (.date, .date): true
        default: false
        }
    }

    /// Coerces a value to the attribute's type as Apple does (a string for a data attribute is its UTF-8; a
    /// numeric string such as `kSecAttrKeyClassPrivate` ("1") for a number attribute is that number; a number
    /// for a bool is its truth). `nil` when the value cannot have that type.
    static func coerce(_ value: AttributeValue, to kind: Kind) -> AttributeValue? {
        if isOfKind(value, kind) { return value }
        return switch (kind, value) {
        case (.data, .string(let text)): .data(Data(text.utf8))
        case (.number, .string(let text)): Int64(text).map { .number($0) }
        case (.number, .bool(let flag)): .number(flag ? 1 : 0)
        case (.bool, .number(let number)): .bool(number != 0)
        default: nil
        }
    }
}
