import KeychainWire
import HardwareKeys
package import Certificates
package import Foundation
package import Keychain

extension KeyType {
    /// Apple's `kSecAttrKeyType` code of the key type: 42 (CSSM_ALGID_RSA) or 73 (CSSM_ALGID_ECDSA), the value
    /// stored in a key item and the string behind `kSecAttrKeyTypeRSA` / `kSecAttrKeyTypeEC`.
    package var keychainTypeCode: Int64 { self == .rsa ? 42 : 73 }

    /// The key type of an Apple `kSecAttrKeyType` code, nil for any other.
    package init?(keychainTypeCode code: Int64) {
        switch code {
        case 42: self = .rsa
        case 73: self = .ellipticCurve
        default: return nil
        }
    }
}

/// The key item Apple stores for an asymmetric key: its data (the key's external representation) and the
/// attributes it derives — class, type, sizes, the application label (SHA-1 of the public key), the usage flags
/// of its class. `SecItemAdd`, `SecKeyCopyAttributes` and the certificate manager all build key items with this,
/// so every layer stores the same item.
package struct KeyItemAttributes {
    /// The key's external representation (the item's data).
    package let data: Data
    package let attributes: ItemAttributes
    /// The attributes that make a key item unique: class, application label, type.
    package let identifying: ItemAttributes

    /// The item of `key`, with an optional application tag and label.
    /// - Throws: ``KeyError`` `.heldElsewhere` for a key on a PKCS#11 token, which the token keeps.
    package init(_ key: AsymmetricKey, applicationTag: Data? = nil, label: String?) throws {
        guard !(key.heldBy is PKCS11Key) else {
            throw KeyError(.heldElsewhere, "the key is on a token, which keeps it: the keychain stores no copy nor reference")
        }
        // A key in the TPM: its item's data is the TPM's blob. A key the keychain service holds: the public key's
        // (the private key is not here).
        let tpmKey = key.heldBy as? TPMKey
        data = try tpmKey?.blob ?? (key.isHeldElsewhere ? key.publicKey().externalRepresentation() : key.externalRepresentation())
        let isPrivate = key.isPrivate
        var attributes: ItemAttributes = [
            .keyClass: .number(isPrivate ? 1 : 0),
            .keyType: .number(key.type.keychainTypeCode),
            .keySizeInBits: .number(Int64(key.sizeInBits)),
            .effectiveKeySize: .number(Int64(key.sizeInBits)),
            .applicationLabel: .data(try key.publicKeySHA1()),
            .isPermanent: .bool(true),
            .isPrivate: .bool(isPrivate),
            .isModifiable: .bool(true),
            .isSensitive: .bool(false),
            .wasAlwaysSensitive: .bool(false),
            .isExtractable: .bool(true),
            .wasNeverExtractable: .bool(false),
            .canEncrypt: .bool(!isPrivate),
            .canDecrypt: .bool(isPrivate),
            .canDerive: .bool(isPrivate),
            .canSign: .bool(isPrivate),
            .canVerify: .bool(!isPrivate),
            .canSignRecover: .bool(false),
            .canVerifyRecover: .bool(false),
            .canWrap: .bool(!isPrivate),
            .canUnwrap: .bool(isPrivate),
        ]
        if key.isHeldElsewhere {
            attributes[.tokenID] = .string(tpmKey != nil ? TPMKey.tokenID : KeychainWire.heldKeyTokenID)
            attributes[.isExtractable] = .bool(false)
            attributes[.isSensitive] = .bool(true)
        }
        if let applicationTag { attributes[.applicationTag] = .data(applicationTag) }
        if let label { attributes[.label] = .string(label) }
        self.attributes = attributes
        identifying = attributes.filter { [.keyClass, .applicationLabel, .keyType].contains($0.key) }
    }
}

/// A key read back from a key item: the key, and the tag and label it was stored with.
package struct StoredKey {
    package let key: AsymmetricKey
    package let applicationTag: Data?
    package let label: String?

    /// The key of a key item, nil when the item is not a well-formed key item (its class and type attributes,
    /// numbers or the numeric strings Apple's constants are, and its data must agree). A private key the keychain
    /// service holds (``KeychainWire/heldKeyTokenID``) signs and decrypts through `store`, the service's store the
    /// item came from; without it such an item gives nil. A key in the TPM (``TPMKey/tokenID``) signs and agrees
    /// there.
    package init?(_ item: KeychainItem, from store: KeychainStore? = nil, authentication: ItemAuthentication? = nil) {
        guard let data = item.data, let attributes = item.attributes,
            let keyClass = Self.code(attributes[.keyClass]), keyClass == 0 || keyClass == 1,
            let type = Self.code(attributes[.keyType]).flatMap(KeyType.init(keychainTypeCode:))
        else { return nil }
        let key: AsymmetricKey?
        if attributes[.tokenID] == .string(TPMKey.tokenID) {
            key = keyClass == 1 ? UserCheckedTPMKey.key(blob: data, item, store, authentication) : nil
        } else if attributes[.tokenID] == .string(KeychainWire.heldKeyTokenID) {
            key =
                keyClass == 1
                ? ServiceHeldKey.key(publicKey: try? AsymmetricKey(externalRepresentation: data, type: type, isPrivate: false), item, store, authentication)
                : nil
        } else {
            key = try? AsymmetricKey(externalRepresentation: data, type: type, isPrivate: keyClass == 1)
        }
        guard let key else { return nil }
        self.key = key
        if case .data(let bytes)? = attributes[.applicationTag] { applicationTag = bytes } else { applicationTag = nil }
        if case .string(let text)? = attributes[.label] { label = text } else { label = nil }
    }

    private static func code(_ value: AttributeValue?) -> Int64? {
        switch value {
        case .number(let number)?: number
        case .string(let text)?: Int64(text)
        default: nil
        }
    }
}

/// The certificate and private key of an identity item, as the store returns one with its reference (the
/// certificate's DER as data, the key's representation beside it, typed by the key attributes it carries).
package struct StoredIdentity {
    package let certificate: Certificate
    package let privateKey: AsymmetricKey

    /// The identity of an identity item, nil when the certificate or the key does not decode. An identity whose
    /// private key the keychain service holds signs and decrypts through `store` (as ``StoredKey``'s).
    package init?(_ item: KeychainItem, from store: KeychainStore? = nil, authentication: ItemAuthentication? = nil) {
        guard let certificateData = item.data, let certificate = try? Certificate(derEncoded: certificateData) else { return nil }
        let key: AsymmetricKey?
        if item.attributes?[.tokenID] == .string(TPMKey.tokenID), let keyData = item.identityKeyData {
            key = UserCheckedTPMKey.key(blob: keyData, item, store, authentication)
        } else if item.attributes?[.tokenID] == .string(KeychainWire.heldKeyTokenID) {
            key = ServiceHeldKey.key(publicKey: try? certificate.publicKey(), item, store, authentication)
        } else if let keyData = item.identityKeyData, case .number(let code)? = item.attributes?[.keyType],
            let type = KeyType(keychainTypeCode: code)
        {
            key = try? AsymmetricKey(externalRepresentation: keyData, type: type, isPrivate: true)
        } else {
            key = nil
        }
        guard let key else { return nil }
        self.certificate = certificate
        privateKey = key
    }
}

/// A private key the keychain service holds: it signs and decrypts there, named by its item's persistent
/// reference, with Apple's algorithm names on the wire.
package struct ServiceHeldKey: PrivateKeyOperations {
    let store: KeychainStore
    let reference: Data
    /// The proof of the user the key was found with, sent with each operation (Apple's key keeps the
    /// `kSecUseAuthenticationContext` of the query that returned it).
    let authentication: ItemAuthentication?

    /// The held key of `item`, whose public half is `publicKey`; nil without a service store, a reference, or
    /// a public key.
    static func key(publicKey: AsymmetricKey?, _ item: KeychainItem, _ store: KeychainStore?, _ authentication: ItemAuthentication?) -> AsymmetricKey? {
        guard let publicKey, let store, store.remote != nil, let reference = item.persistentReference else { return nil }
        return try? AsymmetricKey(publicKey: publicKey, heldBy: ServiceHeldKey(store: store, reference: reference, authentication: authentication))
    }

    package func signature(for data: Data, algorithm: SignatureAlgorithm) throws -> Data {
        try store.keyOperation(.sign, reference: reference, algorithm: try name(.signature(algorithm)), input: data, authentication: authentication)
    }

    package func decrypt(_ data: Data, algorithm: EncryptionAlgorithm) throws -> Data {
        try store.keyOperation(.decrypt, reference: reference, algorithm: try name(.encryption(algorithm)), input: data, authentication: authentication)
    }

    private func name(_ operation: KeyOperation) throws -> String {
        guard let name = operation.algorithmName else {
            throw KeyError(.unsupportedAlgorithm, "\(operation) has no Apple algorithm name: the keychain service cannot run it")
        }
        return name
    }
}

/// A private key in the TPM whose item's access control asks for the user (`.userPresence`, `.devicePasscode`,
/// `.applicationPassword`): before each operation its item is read again with the proof the key was found with, so
/// the keychain checks the user at each use, as the Secure Enclave asks at each use; a locked keychain, a wrong
/// password or a reuse duration that has run out stops the key there. (The TPM holds the key with an empty
/// authorization: this check is the keychain's, in the process that uses the key.)
package struct UserCheckedTPMKey: PrivateKeyOperations {
    let key: TPMKey
    let store: KeychainStore
    let reference: Data
    /// The proof of the user the key was found with (Apple's key keeps the `kSecUseAuthenticationContext` of the
    /// query that returned it).
    let authentication: ItemAuthentication?

    /// The TPM key of `blob`, from `item` of `store`: checked at each use when the item's access control asks for
    /// the user (nil then without the store or the item's persistent reference, which the check needs).
    static func key(blob: Data, _ item: KeychainItem, _ store: KeychainStore?, _ authentication: ItemAuthentication?) -> AsymmetricKey? {
        guard let key = try? TPMKey(blob: blob) else { return nil }
        guard ItemAccessControl.asksForUser(in: item.attributes ?? [:]) else { return try? key.privateKey() }
        guard let store, let reference = item.persistentReference else { return nil }
        return try? AsymmetricKey(
            publicKey: key.publicKey, heldBy: UserCheckedTPMKey(key: key, store: store, reference: reference, authentication: authentication))
    }

    package var holderDescription: String { key.holderDescription }
    package var performsRSAPadding: Bool { key.performsRSAPadding }

    package func signature(for data: Data, algorithm: SignatureAlgorithm) throws -> Data {
        try checkUser()
        return try key.signature(for: data, algorithm: algorithm)
    }

    package func decrypt(_ data: Data, algorithm: EncryptionAlgorithm) throws -> Data {
        try checkUser()
        return try key.decrypt(data, algorithm: algorithm)
    }

    package func sharedSecret(with peer: AsymmetricKey) throws -> Data {
        try checkUser()
        return try key.sharedSecret(with: peer)
    }

    /// Reads the item with its secret (the blob; an identity's key with it) with the proof: the keychain's check of
    /// the user. Its errors are the keychain's (`interactionNotAllowed`, `authFailed`, `itemNotFound` once the item
    /// is deleted).
    private func checkUser() throws {
        _ = try store.find(ItemQuery(nil, persistentReference: reference, returning: .reference, authentication: authentication))
    }
}
