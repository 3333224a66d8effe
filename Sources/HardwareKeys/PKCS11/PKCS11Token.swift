public import Certificates
internal import CPKCS11
import Foundation
public import SecurityBase

/// A token in a PKCS#11 slot (a smart card, an HSM partition, a USB key): its certificates and keys, presented as
/// CryptoTokenKit presents a smart card's.
public struct PKCS11Token: Sendable {
    let modules: PKCS11Modules
    let module: Int
    let slot: UInt
    public let label: String
    public let model: String
    public let serial: String
    /// Whether private-key operations need the user's PIN (nearly every token).
    public let requiresLogin: Bool

    /// The token's `kSecAttrTokenID`: a PKCS#11 URI (RFC 7512) naming it by model, serial and label.
    public var tokenID: String {
        "pkcs11:model=\(Self.encoded(model));serial=\(Self.encoded(serial));token=\(Self.encoded(label))"
    }

    /// RFC 7512's percent-encoding of a path attribute's value.
    static func encoded(_ text: String) -> String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~:[]@!$'()*+,="))
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// The certificates on the token (readable without the PIN), each with its CKA_ID, which names its private key.
    public func certificates() throws -> [(id: [UInt8], label: String, certificate: Certificate)] {
        try withSession(pin: nil) { session in
            try session.find(PKCS11.certificate).compactMap { object in
                guard let der = try session.attribute(object, PKCS11.value), let certificate = try? Certificate(derEncoded: Data(der)) else {
                    return nil
                }
                let label = try session.attribute(object, PKCS11.label).map { String(decoding: $0, as: UTF8.self) } ?? ""
                return (try session.attribute(object, PKCS11.id) ?? [], label, certificate)
            }
        }
    }

    /// The token's private keys as they show without the PIN: one per public key object or certificate, by CKA_ID
    /// (the private key objects themselves are hidden until the PIN is given). Each signs with `pin`.
    public func keys(pin: SecretBytes? = nil) throws -> [PKCS11Key] {
        var keys = Dictionary(try identities(pin: pin).map { ($0.key.id, $0.key) }) { first, _ in first }
        try withSession(pin: nil) { session in
            for object in try session.find(PKCS11.publicKey) {
                let id = try session.attribute(object, PKCS11.id) ?? []
                guard keys[id] == nil, let publicKey = try session.publicKey(object) else { continue }
                let label = try session.attribute(object, PKCS11.label).map { String(decoding: $0, as: UTF8.self) } ?? ""
                keys[id] = PKCS11Key(token: self, id: id, label: label, publicKey: publicKey, pin: pin)
            }
        }
        return keys.values.sorted { $0.label < $1.label }
    }

    /// The token's certificates, each with the private key of its CKA_ID (which signs with `pin`).
    public func identities(pin: SecretBytes? = nil) throws -> [(certificate: Certificate, key: PKCS11Key)] {
        try certificates().compactMap { id, label, certificate in
            guard let publicKey = try? certificate.publicKey() else { return nil }
            return (certificate, PKCS11Key(token: self, id: id, label: label, publicKey: publicKey, pin: pin))
        }
    }

    /// The key with CKA_ID `id` (its public key object or certificate shows it without the PIN), signing with `pin`;
    /// nil when the token has none.
    public func key(id: [UInt8], pin: SecretBytes? = nil) throws -> PKCS11Key? {
        try keys(pin: pin).first { $0.id == id }
    }

    /// Writes `certificate` onto the token beside `key`, under the key's CKA_ID (as a card's enrolment leaves it: the
    /// token then holds the identity), labelled `label`, logged in with the key's PIN.
    /// - Throws: ``HardwareKeyError`` `.interactionNotAllowed` without a PIN, `.authenticationFailed`, `.deviceFailure`
    ///   (the token refused the object, for one a token that is full or read-only).
    public func store(_ certificate: Certificate, for key: PKCS11Key, label: String) throws {
        let subject = [UInt8](certificate.subject.derEncoded)
        let value = [UInt8](certificate.derEncoded)
        try withSession(pin: key.pin ?? SecretBytes([])) { session in
            var object: UInt = 0
            try session.check("certificate's storage") { modules, module, handle in
                cp11_create_certificate(
                    modules, module, handle, label, key.id, key.id.count, subject, subject.count, value, value.count, &object)
            }
        }
    }

    /// Deletes `key` from the token: its private and public key objects and any certificate of its CKA_ID, logged in
    /// with the key's PIN.
    /// - Throws: ``HardwareKeyError`` `.interactionNotAllowed` without a PIN, `.authenticationFailed`, `.deviceFailure`.
    public func delete(_ key: PKCS11Key) throws {
        try withSession(pin: key.pin ?? SecretBytes([])) { session in
            for objectClass in [PKCS11.privateKey, PKCS11.publicKey, PKCS11.certificate] {
                for object in try session.find(objectClass, id: key.id) {
                    try session.check("deletion") { modules, module, handle in cp11_destroy(modules, module, handle, object) }
                }
            }
        }
    }

    /// Makes an EC P-256 key pair on the token (the private key sensitive and never extractable), labelled `label`,
    /// with a fresh random CKA_ID.
    /// - Throws: ``HardwareKeyError`` `.interactionNotAllowed` without a PIN, `.authenticationFailed`, `.deviceFailure`.
    public func generateP256(label: String, pin: SecretBytes?) throws -> PKCS11Key {
        try generate(label: label, pin: pin) { modules, module, session, id, publicObject, privateObject in
            cp11_generate_p256(modules, module, session, label, id, id.count, publicObject, privateObject)
        }
    }

    /// Makes an RSA key pair of `bits` (2048, 3072 or 4096) on the token, exponent 65537, as ``generateP256(label:pin:)``
    /// does (it signs and decrypts there).
    /// - Throws: ``KeyError`` `.unsupportedKeySize` for another size; the errors of ``generateP256(label:pin:)``
    ///   (`.deviceFailure` for a size the token does not make).
    public func generateRSA(bits: Int, label: String, pin: SecretBytes?) throws -> PKCS11Key {
        guard [2048, 3072, 4096].contains(bits) else {
            throw KeyError(.unsupportedKeySize, "keys made on a token are RSA-2048, 3072 or 4096, not \(bits) bits")
        }
        return try generate(label: label, pin: pin) { modules, module, session, id, publicObject, privateObject in
            cp11_generate_rsa(modules, module, session, UInt(bits), label, id, id.count, publicObject, privateObject)
        }
    }

    /// Makes a key pair on the token with `make`, under a fresh random CKA_ID: the key, its public half read back.
    private func generate(
        label: String, pin: SecretBytes?,
        _ make: (OpaquePointer, Int, UInt, [UInt8], UnsafeMutablePointer<UInt>, UnsafeMutablePointer<UInt>) -> UInt
    ) throws -> PKCS11Key {
        var id = [UInt8](repeating: 0, count: 16)
        guard getentropy(&id, id.count) == 0 else { throw HardwareKeyError(.deviceFailure, "no randomness for the key's identifier") }
        let publicKey = try withSession(pin: pin ?? SecretBytes([])) { session in
            var publicObject: UInt = 0
            var privateObject: UInt = 0
            try session.check("key generation") { modules, module, handle in
                make(modules, module, handle, id, &publicObject, &privateObject)
            }
            guard let key = try session.publicKey(publicObject) else {
                throw HardwareKeyError(.deviceFailure, "the token made a key whose public half does not read")
            }
            return key
        }
        return PKCS11Key(token: self, id: id, label: label, publicKey: publicKey, pin: pin)
    }

    /// Runs `body` in a session logged in with `pin` when given (an empty PIN: for a token that needs one, the
    /// error that says so), else in a session of its own that reads public objects.
    ///
    /// After a login the session stays open and logged in for the next operation with the same PIN (compared in
    /// constant time): the token's PIN check, a key derivation, is most of an operation's cost. Another PIN closes
    /// it first, logging the application out, so that the token checks that PIN itself; a session the token closed
    /// or logged out (removed, reset) is opened again. A session without a PIN, opened beside a kept one, is logged
    /// in too (PKCS#11 logs in the application): only this package's reads of certificates and public keys open one.
    func withSession<T>(pin: SecretBytes?, _ body: (Session) throws -> T) throws -> T {
        if let pin, pin.isEmpty, requiresLogin {
            throw HardwareKeyError(
                .interactionNotAllowed, "the token \(label) needs its PIN, and nobody can be asked here: give it in the authentication context")
        }
        let key = PKCS11Modules.Login.Slot(module: module, slot: slot)
        return try modules.call { modules, logins in
            let login = pin.flatMap { $0.isEmpty ? nil : $0 }
            if let login, let kept = logins[key] {
                let same = login.withUnsafeBytes { kept.pin.constantTimeEquals($0) }
                if same, cp11_logged_in(modules, module, kept.session) != 0 {
                    return try body(Session(modules: modules, module: module, handle: kept.session, token: label))
                }
                cp11_close(modules, module, kept.session)
                logins[key] = nil
            }
            var handle: UInt = 0
            let rv =
                if let login {
                    login.withUnsafeBytes { cp11_open(modules, module, slot, $0.bindMemory(to: UInt8.self).baseAddress, $0.count, &handle) }
                } else {
                    cp11_open(modules, module, slot, nil, 0, &handle)
                }
            switch rv {
            case 0: break
            case PKCS11.pinIncorrect, PKCS11.pinLengthRange:
                throw HardwareKeyError(.authenticationFailed, "the token \(label) refused the PIN")
            case PKCS11.pinLocked:
                throw HardwareKeyError(.authenticationFailed, "the token \(label)'s PIN is locked")
            default:
                throw HardwareKeyError(.deviceFailure, "the token \(label) opened no session: \(PKCS11.describe(rv))")
            }
            if let login {
                logins[key] = PKCS11Modules.Login(session: handle, pin: login)
            }
            defer { if login == nil { cp11_close(modules, module, handle) } }
            return try body(Session(modules: modules, module: module, handle: handle, token: label))
        }
    }

    /// An open session, for the length of one ``withSession(pin:_:)``.
    struct Session {
        let modules: OpaquePointer
        let module: Int
        let handle: UInt
        let token: String

        /// Objects of `objectClass`, with CKA_ID `id` when given.
        func find(_ objectClass: UInt, id: [UInt8]? = nil) throws -> [UInt] {
            var objects = [UInt](repeating: 0, count: 256)
            var count = objects.count
            try check("search") { modules, module, handle in
                if let id {
                    cp11_find(modules, module, handle, objectClass, id, id.count, &objects, &count)
                } else {
                    cp11_find(modules, module, handle, objectClass, nil, 0, &objects, &count)
                }
            }
            return Array(objects.prefix(min(count, objects.count)))
        }

        /// An attribute's bytes; nil when the object has none.
        func attribute(_ object: UInt, _ type: UInt) throws -> [UInt8]? {
            var size = 0
            guard cp11_attribute(modules, module, handle, object, type, nil, &size) == 0 else { return nil }
            var value = [UInt8](repeating: 0, count: size)
            guard cp11_attribute(modules, module, handle, object, type, &value, &size) == 0 else { return nil }
            return Array(value.prefix(size))
        }

        /// A public key object's key: EC (CKA_EC_POINT, DER-wrapped or not) or RSA (modulus and exponent).
        func publicKey(_ object: UInt) throws -> AsymmetricKey? {
            guard let type = try attribute(object, PKCS11.keyType), let code = type.first else { return nil }
            if code == UInt8(PKCS11.ecKey), let point = try attribute(object, PKCS11.ecPoint) {
                return try? AsymmetricKey(externalRepresentation: Data(DER.unwrappedPoint(point)), type: .ellipticCurve, isPrivate: false)
            }
            if code == UInt8(PKCS11.rsaKey), let modulus = try attribute(object, PKCS11.modulus),
                let exponent = try attribute(object, PKCS11.publicExponent)
            {
                return try? AsymmetricKey(externalRepresentation: Data(DER.rsaPublicKey(modulus: modulus, exponent: exponent)), type: .rsa, isPrivate: false)
            }
            return nil
        }

        /// Runs a call that returns a CK_RV, turning a failure into ``HardwareKeyError``.
        func check(_ what: String, _ call: (OpaquePointer, Int, UInt) -> UInt) throws {
            let rv = call(modules, module, handle)
            guard rv == 0 else {
                if rv == PKCS11.userNotLoggedIn {
                    throw HardwareKeyError(
                        .interactionNotAllowed, "the token \(token) needs its PIN for the \(what): give it in the authentication context")
                }
                throw HardwareKeyError(.deviceFailure, "the token \(token) failed the \(what): \(PKCS11.describe(rv))")
            }
        }
    }
}
