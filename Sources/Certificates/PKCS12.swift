public import SecurityBase
internal import COpenSSL
internal import COpenSSLShims
public import Foundation

/// Why a PKCS#12 file could not be imported. Equal by code.
public struct PKCS12Error: CodedError {
    public typealias Code = ErrorCode<PKCS12Error>

    public let code: Code
    public let reason: String
    public let location: ErrorLocation

    public init(_ code: Code, _ reason: String, file: StaticString = #fileID, line: UInt = #line) {
        location = ErrorLocation(fileID: file, line: line)
        self.code = code
        self.reason = reason
    }
}

extension ErrorCode where Domain == PKCS12Error {
    /// The bytes are not a PKCS#12 file, or its contents do not decode (`errSecDecode`).
    public static let malformed = Self(name: "malformed")
    /// The passphrase does not verify the file's MAC or decrypt its contents (`errSecAuthFailed`).
    public static let wrongPassphrase = Self(name: "wrongPassphrase")
    /// Export: the private key is not the certificate's (`errSecParam`).
    public static let keyMismatch = Self(name: "keyMismatch")
    /// Export: a private key is needed, or OpenSSL could not build the file.
    public static let exportFailed = Self(name: "exportFailed")
}

/// What a PKCS#12 file holds: a certificate with its private key (the identity), the other certificates
/// (the chain), and the identity's friendly name and local key ID.
public struct PKCS12Contents: Sendable {
    public let certificate: Certificate
    public let privateKey: AsymmetricKey
    /// The other certificates of the file, in file order.
    public let chain: [Certificate]
    /// The certificate's friendly name (`kSecImportItemLabel`).
    public let label: String?
    /// The certificate's local key ID (`kSecImportItemKeyID`).
    public let keyID: Data?
}

/// PKCS#12 import (RFC 7292), legacy (RC2/3DES, SHA-1 MAC) and modern (AES-256, PBKDF2) files alike.
public enum PKCS12 {
    /// Loads OpenSSL's legacy provider (RC2 and 40-bit schemes of older files; single DES, which some SCEP servers
    /// answer in) next to the default one, once.
    package static let providers: Bool = loadedProviders.legacy != nil

    /// The provider handles, kept for the process's life (never unloaded: what is fetched from them is cached
    /// process-wide), and kept here rather than dropped so that a leak checker sees them reachable (a fuzz run
    /// under LeakSanitizer reported the dropped ones).
    private static let loadedProviders: (default: ProviderHandle?, legacy: ProviderHandle?) = {
        // OSSL_PROVIDER_load: loading any provider explicitly turns off the implicit default, so both are loaded.
        (OSSL_PROVIDER_load(nil, "default").map(ProviderHandle.init), OSSL_PROVIDER_load(nil, "legacy").map(ProviderHandle.init))
    }()

    /// Reads the identity and chain of a PKCS#12 file. Nothing is kept if any part fails.
    /// - Parameters:
    ///   - data: the DER bytes of the file.
    ///   - passphrase: the password (an empty string for none).
    /// - Returns: the file's contents, or `nil` when it holds no certificate with its private key.
    /// - Throws: ``PKCS12Error`` `.malformed` or `.wrongPassphrase`.
    public static func parse(_ data: Data, passphrase: String) throws -> PKCS12Contents? {
        _ = providers
        ERR_clear_error()
        let bytes = Array(data)
        let file: OpaquePointer? = bytes.withUnsafeBufferPointer { buffer in
            var start = buffer.baseAddress
            // d2i_PKCS12 advances `start` past what it read.
            let file = d2i_PKCS12(nil, &start, buffer.count)
            guard let file, let start, let base = buffer.baseAddress, start - base == buffer.count else {
                PKCS12_free(file)
                return nil
            }
            return file
        }
        guard let file else { throw PKCS12Error(.malformed, "not one DER PKCS#12 structure") }
        defer { PKCS12_free(file) }
        // A file protected by an empty password may have been made with NULL or with ""; OpenSSL's own
        // PKCS12_parse tries both the same way.
        let emptyAsNull = passphrase.isEmpty && PKCS12_verify_mac(file, nil, 0) == 1
        var key: OpaquePointer?
        var certificate: OpaquePointer?
        var others: OpaquePointer?
        let parsed = try withCPassphrase(passphrase) { given, length in
            let password = emptyAsNull ? nil : given
            if PKCS12_mac_present(file) == 1, password.map({ PKCS12_verify_mac(file, $0, length) }) ?? 1 != 1 {
                ERR_clear_error()
                throw PKCS12Error(.wrongPassphrase, "the passphrase does not verify the file's MAC")
            }
            return PKCS12_parse(file, password, &key, &certificate, &others) == 1
        }
        guard parsed else {
            ERR_clear_error()
            // The MAC verified (or there is none): the contents themselves do not decrypt or decode.
            throw PKCS12_mac_present(file) == 1
                ? PKCS12Error(.malformed, "the file's contents do not decode")
                : PKCS12Error(.wrongPassphrase, "the passphrase does not decrypt the file")
        }
        defer {
            X509_free(certificate)
            copenssl_x509_stack_free(others)
        }
        guard let certificate else {
            EVP_PKEY_free(key)
            return nil
        }
        guard let key else { return nil }
        let privateKey: AsymmetricKey
        do {
            privateKey = try AsymmetricKey(takingOwnership: key, isPrivate: true)
        } catch {
            throw PKCS12Error(.malformed, "the private key is neither RSA nor EC on P-256, P-384 or P-521")
        }
        let leaf = try copy(certificate)
        var chain: [Certificate] = []
        for index in 0..<max(0, copenssl_x509_stack_count(others)) {
            if let other = copenssl_x509_stack_value(others, index) { chain.append(try copy(other)) }
        }
        var labelLength: Int32 = 0
        let label = X509_alias_get0(certificate, &labelLength).map {
            String(decoding: UnsafeBufferPointer(start: $0, count: Int(labelLength)), as: UTF8.self)
        }
        var keyIDLength: Int32 = 0
        let keyID = X509_keyid_get0(certificate, &keyIDLength).map { Data(bytes: $0, count: Int(keyIDLength)) }
        return PKCS12Contents(certificate: leaf, privateKey: privateKey, chain: chain, label: label, keyID: keyID)
    }

    /// The passphrase as a NUL-terminated C string in wiped storage (``SecretBytes``) for the length of `body`, with
    /// its length in bytes: a Swift `String` handed to C directly is copied into a temporary no wipe reaches.
    private static func withCPassphrase<R>(
        _ passphrase: String, _ body: (UnsafePointer<CChar>, Int32) throws -> R
    ) rethrows -> R {
        var bytes = SecretBytes(passphrase.utf8)
        bytes.append(0)
        return try bytes.withUnsafeBytes { raw in
            try body(raw.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(raw.count - 1))  // !: count >= 1
        }
    }

    /// Writes an identity, and the certificates of its chain, as a PKCS#12 file that `openssl pkcs12`,
    /// ``parse(_:passphrase:)`` and Apple's `SecPKCS12Import` read.
    ///
    /// Modern files (the default) encrypt the key and the certificates with AES-256-CBC under PBKDF2 and carry
    /// an HMAC-SHA-256 MAC, OpenSSL 3's defaults. Legacy files use PKCS#12's own 3DES (key) and 40-bit RC2
    /// (certificates) with a SHA-1 MAC, for readers that know nothing newer (older Apple systems, Java 8).
    /// - Parameters:
    ///   - certificate: the identity's certificate.
    ///   - privateKey: its private key.
    ///   - chain: other certificates to include (intermediates, root), in order.
    ///   - passphrase: the password protecting the file.
    ///   - label: the friendly name (`kSecImportItemLabel` on import); the local key ID is always set.
    ///   - legacy: whether to write the legacy algorithms.
    ///   - iterations: the key-derivation and MAC iteration count (OpenSSL's default 2048).
    /// - Returns: the DER bytes of the file.
    /// - Throws: ``PKCS12Error`` `.keyMismatch` (the key is not the certificate's), `.exportFailed` (a public
    ///   key, or OpenSSL refused).
    public static func export(
        certificate: Certificate, privateKey: AsymmetricKey, chain: [Certificate] = [], passphrase: String,
        label: String? = nil, legacy: Bool = false, iterations: Int = 2048
    ) throws -> Data {
        _ = providers
        guard privateKey.isPrivate else { throw PKCS12Error(.exportFailed, "an identity needs a private key") }
        guard (1...10_000_000).contains(iterations) else {
            throw PKCS12Error(.exportFailed, "\(iterations) is not an iteration count")
        }
        ERR_clear_error()
        guard let others = copenssl_x509_stack_new() else { throw PKCS12Error(.exportFailed, "no memory") }
        defer { copenssl_x509_stack_free(others) }
        for member in chain {
            // The stack frees what it holds: each member gets a reference of its own.
            let pushed = member.withUnsafeX509 { x509 -> Bool in
                guard X509_up_ref(x509) == 1 else { return false }
                if copenssl_x509_stack_push(others, x509) == 1 { return true }
                X509_free(x509)
                return false
            }
            guard pushed else { throw PKCS12Error(.exportFailed, "no memory") }
        }
        guard !privateKey.isHeldElsewhere else {
            throw PKCS12Error(.exportFailed, "the private key is held by the keychain service and cannot be exported")
        }
        let file: OpaquePointer? = try certificate.withUnsafeX509 { leaf in
            try privateKey.withUnsafePKEY { pkey in
                guard X509_check_private_key(leaf, pkey) == 1 else {
                    ERR_clear_error()
                    throw PKCS12Error(.keyMismatch, "the private key is not the certificate's")
                }
                // PKCS12_create: 0 for the algorithms selects OpenSSL 3's defaults (AES-256-CBC, PBKDF2); a MAC
                // iteration count of -1 leaves the MAC out, so that it is added below with an explicit digest.
                let keyAlgorithm = legacy ? NID_pbe_WithSHA1And3_Key_TripleDES_CBC : 0
                let certificateAlgorithm = legacy ? NID_pbe_WithSHA1And40BitRC2_CBC : 0
                return withCPassphrase(passphrase) { passphrase, _ in
                    PKCS12_create(
                        passphrase, label, pkey, leaf, others, keyAlgorithm, certificateAlgorithm, Int32(iterations), -1,
                        0)
                }
            }
        }
        guard let file else {
            ERR_clear_error()
            throw PKCS12Error(.exportFailed, "OpenSSL could not build the file")
        }
        defer { PKCS12_free(file) }
        // PKCS12_set_mac: a NULL salt makes a random one; the digest is SHA-1 for legacy readers, else SHA-256.
        let digest = legacy ? EVP_sha1() : EVP_sha256()
        guard withCPassphrase(passphrase, { given, _ in PKCS12_set_mac(file, given, -1, nil, 0, Int32(iterations), digest) }) == 1 else {
            ERR_clear_error()
            throw PKCS12Error(.exportFailed, "the MAC could not be computed")
        }
        var der: UnsafeMutablePointer<UInt8>?
        let count = i2d_PKCS12(file, &der)
        guard count > 0, let der else {
            ERR_clear_error()
            throw PKCS12Error(.exportFailed, "the file does not encode")
        }
        defer { CRYPTO_free(der, #file, #line) }
        return Data(bytes: der, count: Int(count))
    }

    /// A ``Certificate`` of its own for an OpenSSL certificate (through its DER).
    private static func copy(_ certificate: OpaquePointer) throws -> Certificate {
        var der: UnsafeMutablePointer<UInt8>?
        let count = i2d_X509(certificate, &der)
        guard count > 0, let der else { throw PKCS12Error(.malformed, "a certificate does not encode") }
        defer { CRYPTO_free(der, #file, #line) }
        do {
            return try Certificate(derEncoded: UnsafeBufferPointer(start: der, count: Int(count)))
        } catch {
            throw PKCS12Error(.malformed, "a certificate of the file does not parse")
        }
    }
}

/// An `OSSL_PROVIDER` handle held for the process's life (OpenSSL's provider objects are thread-safe).
private struct ProviderHandle: @unchecked Sendable {
    // @unchecked: an opaque pointer to a provider OpenSSL keeps and locks itself; never freed, never mutated here.
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}
