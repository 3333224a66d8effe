package import Certificates

/// What one of Apple's `SecKeyAlgorithm` names (`algid:sign:RSA:digest-PSS:SHA256:SHA256:32`, …) means to the key
/// layer. The `Security` module's `SecKey` calls and the keychain service's key operations (which are named on
/// the wire by these strings) read them through this one table.
package enum KeyOperation: Hashable {
    case signature(SignatureAlgorithm)
    case encryption(EncryptionAlgorithm)

    private static let table: [String: KeyOperation] = {
        var table: [String: KeyOperation] = [
            "algid:sign:RSA:raw": .signature(.rsaRaw),
            "algid:sign:RSA:digest-PKCS1v15": .signature(.rsaPKCS1v15Raw),
            "algid:sign:ECDSA:RFC4754": .signature(.ecdsaRFC4754(nil, hashing: false)),
            "algid:sign:ECDSA:digest-X962": .signature(.ecdsaX962(nil, hashing: false)),
            "algid:sign:ECDSA:digest-RFC4754": .signature(.ecdsaRFC4754(nil, hashing: false)),
            "algid:encrypt:RSA:raw": .encryption(.rsaRaw),
            "algid:encrypt:RSA:PKCS1": .encryption(.rsaPKCS1),
        ]
        for digest in KeyDigest.all {
            let pss = "\(digest.name):\(digest.name):\(digest == .sha224 ? 24 : digest.size)"
            table["algid:sign:RSA:digest-PKCS1v15:\(digest.name)"] = .signature(.rsaPKCS1v15(digest, hashing: false))
            table["algid:sign:RSA:message-PKCS1v15:\(digest.name)"] = .signature(.rsaPKCS1v15(digest, hashing: true))
            table["algid:sign:RSA:digest-PSS:\(pss)"] = .signature(.rsaPSS(digest, hashing: false))
            table["algid:sign:RSA:message-PSS:\(pss)"] = .signature(.rsaPSS(digest, hashing: true))
            table["algid:sign:ECDSA:digest-X962:\(digest.name)"] = .signature(.ecdsaX962(digest, hashing: false))
            table["algid:sign:ECDSA:message-X962:\(digest.name)"] = .signature(.ecdsaX962(digest, hashing: true))
            table["algid:encrypt:RSA:OAEP:\(digest.name)"] = .encryption(.rsaOAEP(digest))
            table["algid:sign:ECDSA:digest-RFC4754:\(digest.name)"] = .signature(.ecdsaRFC4754(digest, hashing: false))
            table["algid:sign:ECDSA:message-RFC4754:\(digest.name)"] = .signature(.ecdsaRFC4754(digest, hashing: true))
        }
        return table
    }()

    package init?(algorithmName: String) {
        guard let operation = Self.table[algorithmName] else { return nil }
        self = operation
    }

    /// One of Apple's names for this operation (the first in order where several name it); nil for one Apple
    /// has no name for (PSS with another salt length).
    package var algorithmName: String? { Self.names[self] }

    private static let names: [KeyOperation: String] = Dictionary(table.map { ($0.value, $0.key) }) { min($0, $1) }
}
