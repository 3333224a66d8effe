import Certificates
import Foundation
import HardwareKeys
import Keychain
import SecurityBase

/// `SecItemCopyMatching` over PKCS#11 tokens, as CryptoTokenKit presents smart cards: a search naming a token
/// (`kSecAttrTokenID`: its PKCS#11 URI) or the token access group (`kSecAttrAccessGroupToken`) finds the tokens'
/// certificates, keys and identities (a certificate with the private key of the same CKA_ID). Keys found sign,
/// decrypt and agree on the token, with the PIN of the query's authentication context (`kSecUseAuthenticationContext`:
/// the context's password); without one, their operations fail with `errSecInteractionNotAllowed`.
enum TokenItems {
    /// The attributes a token search can match on.
    static let searchable: Set<AttributeKey> = [.label, .applicationLabel, .keyClass, .keyType, .keySizeInBits, .tokenID, .accessGroup]

    static func isTokenSearch(_ query: ItemQuery) -> Bool {
        if case .string(let token)? = query.matching[.tokenID], token.hasPrefix("pkcs11:") { return true }
        return query.matching[.accessGroup] == .string(kSecAttrAccessGroupToken as String)
    }

    /// One item on a token: its attributes under Apple's keys, its data, its reference.
    struct Item {
        let attributes: [String: AnyObject]
        let data: Data
        let reference: AnyObject
    }

    static func copyMatching(_ query: ItemQuery) throws -> CFTypeRef? {
        guard let itemClass = query.itemClass, [.certificate, .key, .identity].contains(itemClass) else {
            throw KeychainError(.parameter, "a token holds certificates, keys and identities: kSecClass names one")
        }
        for key in query.matching.keys where !searchable.contains(key) {
            throw KeychainError(.unimplemented, "\(key.rawValue) is not matched on a token's items")
        }
        let modules: PKCS11Modules
        do {
            modules = try PKCS11Modules.shared()
        } catch {
            throw KeychainError(.itemNotFound, "no PKCS#11 module loads: no token to search")
        }
        var found: [Item] = []
        for token in try modules.tokens() {
            if case .string(let wanted)? = query.matching[.tokenID], wanted != token.tokenID { continue }
            found += try items(of: itemClass, on: token, pin: query.authentication?.password).filter { matches($0, query.matching) }
        }
        if let maximum = query.limit.maximum { found = Array(found.prefix(maximum)) }
        guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item on a token matches the query") }
        guard !query.returning.isEmpty else { return nil }
        let values = found.map { value($0, query.returning) }
        return query.limit == .one ? values[0] : NSArray(array: values)
    }

    /// The items of `itemClass` on `token`; keys use `pin`.
    static func items(of itemClass: ItemClass, on token: PKCS11Token, pin: SecretBytes?) throws -> [Item] {
        func common(_ itemClass: ItemClass, label: String) -> [String: AnyObject] {
            [
                "class": itemClass.rawValue as NSString, "labl": label as NSString, "tkid": token.tokenID as NSString,
                "agrp": kSecAttrAccessGroupToken as NSString,
            ]
        }
        func keyAttributes(_ key: AsymmetricKey, label: String, isPrivate: Bool) throws -> [String: AnyObject] {
            var attributes = common(.key, label: label)
            attributes["kcls"] = NSNumber(value: isPrivate ? 1 : 0)
            attributes["type"] = NSNumber(value: key.type == .rsa ? 42 : 73)
            attributes["bsiz"] = NSNumber(value: key.sizeInBits)
            attributes["esiz"] = NSNumber(value: key.sizeInBits)
            attributes["klbl"] = try key.publicKeySHA1() as NSData
            attributes["extr"] = NSNumber(value: false)
            attributes["sens"] = NSNumber(value: isPrivate)
            return attributes
        }
        switch itemClass {
        case .certificate:
            return try token.certificates().map { _, label, certificate in
                Item(
                    attributes: common(.certificate, label: label), data: certificate.derEncoded,
                    reference: SecCertificate(certificate))
            }
        case .key:
            return try token.keys(pin: pin).flatMap { key -> [Item] in
                let privateKey = SecKey(try key.privateKey(), applicationTag: nil, label: key.label)
                let publicKey = SecKey(key.publicKey, applicationTag: nil, label: key.label)
                return [
                    Item(attributes: try keyAttributes(key.publicKey, label: key.label, isPrivate: true), data: Data(), reference: privateKey),
                    Item(
                        attributes: try keyAttributes(key.publicKey, label: key.label, isPrivate: false),
                        data: try key.publicKey.externalRepresentation(), reference: publicKey),
                ]
            }
        case .identity:
            return try token.identities(pin: pin).map { certificate, key in
                var attributes = try keyAttributes(key.publicKey, label: key.label, isPrivate: true)
                attributes["class"] = ItemClass.identity.rawValue as NSString
                let identity = SecIdentity(
                    certificate: SecCertificate(certificate), privateKey: SecKey(try key.privateKey(), applicationTag: nil, label: key.label))
                return Item(attributes: attributes, data: certificate.derEncoded, reference: identity)
            }
        default:
            return []
        }
    }

    /// Whether `item` has every attribute the query names (numbers given as numeric strings too, as Apple's
    /// constants are).
    static func matches(_ item: Item, _ matching: ItemAttributes) -> Bool {
        matching.allSatisfy { key, wanted in
            let have = item.attributes[key.rawValue]
            switch wanted {
            case .string(let text):
                if let string = have as? String { return string == text }
                if let number = have as? NSNumber { return number.stringValue == text }
                return false
            case .number(let number): return (have as? NSNumber)?.int64Value == number
            case .data(let data): return (have as? Data) == data
            case .bool(let flag): return (have as? NSNumber)?.boolValue == flag
            default: return false
            }
        }
    }

    /// What `returning` asks for, shaped as the keychain's results are (a token's items have no persistent
    /// reference).
    static func value(_ item: Item, _ returning: ReturnOptions) -> CFTypeRef {
        ItemTranslation.shaped(
            returning, attributes: { item.attributes }, data: item.data, persistentReference: nil, reference: { item.reference })
    }
}
