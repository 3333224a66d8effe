import KeychainWire
import Certificates
import HardwareKeys
import Foundation
import Keychain
import KeychainItems

/// Private keys do not leave the service: every key and identity item it answers with is sealed on the way out
/// (``KeychainWire/heldKeyTokenID``). A private key item's data becomes its public key's representation; an
/// identity loses its private key's data; both carry the token ID among their attributes (`kSecAttrTokenID`,
/// with `kSecAttrIsExtractable` false) and their persistent reference, by which the caller asks the service to
/// sign or decrypt. Key data that decodes as a private key is held whatever the item's attributes say, and a held
/// key's class, type and data cannot be updated (an update could otherwise relabel it public and read it out).
/// Public keys, certificates, passwords and keys held in a TPM (whose data is the TPM's blob) pass unchanged.
enum HeldKeys {
    /// The store query for `query`: one that may return a key's data also returns the attributes and persistent
    /// reference sealing needs.
    static func storeQuery(_ query: ItemQuery) -> ItemQuery {
        var widened = query
        widened.returning = storeReturning(query.itemClass, query.returning)
        return widened
    }

    /// The return options the store is asked for, for items of `itemClass` (nil: any class).
    static func storeReturning(_ itemClass: ItemClass?, _ returning: ReturnOptions) -> ReturnOptions {
        guard [nil, .key, .identity].contains(itemClass), !returning.isDisjoint(with: [.data, .reference]) else { return returning }
        return returning.union([.attributes, .persistentReference])
    }

    /// `item` as the caller may see it, having asked for `returning`.
    static func seal(_ item: KeychainItem, asked returning: ReturnOptions) -> KeychainItem {
        var sealed = item
        switch item.itemClass {
        case .key where item.attributes?[.tokenID] == .string(TPMKey.tokenID) && item.data.flatMap(privateKey(in:)) == nil:
            // A key in the TPM: its data is the TPM's blob, which only that TPM opens (the private key is not here).
            break
        case .key where item.data != nil && isPrivateKey(item):
            // Its public half; a private key's data that does not decode is withheld all the same.
            sealed.data = try? item.data.flatMap(privateKey(in:))?.publicKey().externalRepresentation()
            mark(&sealed)
            return sealed
        case .identity where item.identityKeyData != nil:
            sealed.identityKeyData = nil
            mark(&sealed)
            return sealed
        default:
            break
        }
        // Nothing held: only what was asked for.
        if !returning.contains(.attributes) && !returning.contains(.reference) { sealed.attributes = nil }
        if !returning.contains(.persistentReference) && !returning.contains(.reference) { sealed.persistentReference = nil }
        return sealed
    }

    /// Whether a key item holds a private key: its class says so, or its data decodes as one whatever the class says.
    static func isPrivateKey(_ item: KeychainItem) -> Bool {
        [.number(1), .string("1")].contains(item.attributes?[.keyClass]) || item.data.flatMap(privateKey(in:)) != nil
    }

    /// `data` as a private key of any type the keychain stores; nil when it is not one.
    static func privateKey(in data: Data) -> AsymmetricKey? {
        for type in [KeyType.rsa, .ellipticCurve] {
            if let key = try? AsymmetricKey(externalRepresentation: data, type: type, isPrivate: true) { return key }
        }
        return nil
    }

    /// The attributes an update may not change on a held key.
    static let fixedAttributes: Set<AttributeKey> = [.keyClass, .keyType]

    /// Refuses an update that would change a held key's class, type or data: `store` is searched with the update's
    /// query first, and the update is refused (`errSecParam`) when any key it matches is private.
    static func checkUpdate(_ query: ItemQuery, attributes: ItemAttributes, data: Data?, on store: EmbeddedKeychain) throws {
        guard [nil, .key, .identity].contains(query.itemClass),
            data != nil || attributes.keys.contains(where: fixedAttributes.contains)
        else { return }
        var search = query
        search.limit = .all
        search.returning = [.attributes, .data]
        let matched: [KeychainItem]
        do {
            matched = try store.find(search)
        } catch let error as KeychainError where error.code == .itemNotFound {
            return
        }
        for item in matched where item.itemClass == .identity || (item.itemClass == .key && isPrivateKey(item)) {
            throw KeychainError(.parameter, "a private key the service holds cannot change its class, type or data")
        }
    }

    private static func mark(_ item: inout KeychainItem) {
        item.attributes?[.tokenID] = .string(KeychainWire.heldKeyTokenID)
        item.attributes?[.isExtractable] = .bool(false)
        item.attributes?[.isSensitive] = .bool(true)
    }
}
