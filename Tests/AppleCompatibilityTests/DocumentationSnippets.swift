// Apple-platform code, unchanged: the shapes Apple's Certificate, Key, and Trust Services articles give for each
// header ("Generating New Cryptographic Keys", "Storing Keys in the Keychain", "Getting an Existing Key", "Using
// Keys for Encryption", "Signing and Verifying", "Storing Keys as Data", "Storing a DER-Encoded X.509 Certificate",
// "Examining a Certificate", "Creating a Trust Object", "Evaluating a Trust and Parsing the Result", "Generating
// Random Numbers", and macOS's SecItemImport and shared-web-credential usage), written as an iOS or macOS app
// writes them: force casts of CF results, `error!.takeRetainedValue() as Error`, `as Data?` bridging. It imports
// only what an Apple-platform file imports.
import Foundation
import Security

public enum SnippetError: Error, Equatable {
    case status(OSStatus)
    case unsupported
    case tooLong
}

public enum DocumentationSnippets {
    // MARK: SecKey.h

    /// "Generating New Cryptographic Keys": a permanent RSA private key tagged in the keychain, and its public key.
    public static func generateKeyPair(tag: String, bits: Int = 2048) throws -> (privateKey: SecKey, publicKey: SecKey) {
        let tag = tag.data(using: .utf8)!
        let attributes: [String: Any] =
            [kSecAttrKeyType as String: kSecAttrKeyTypeRSA,
             kSecAttrKeySizeInBits as String: bits,
             kSecPrivateKeyAttrs as String:
                [kSecAttrIsPermanent as String: true,
                 kSecAttrApplicationTag as String: tag]]
        var error: Unmanaged<CFError>?
        guard let privateKey = SecKeyCreateRandomKey(attributes as CFDictionary, &error) else {
            throw error!.takeRetainedValue() as Error
        }
        let publicKey = SecKeyCopyPublicKey(privateKey)!
        return (privateKey, publicKey)
    }

    /// "Getting an Existing Key": the private key stored under `tag`.
    public static func existingKey(tag: String) throws -> SecKey {
        let getquery: [String: Any] = [kSecClass as String: kSecClassKey,
                                       kSecAttrApplicationTag as String: tag.data(using: .utf8)!,
                                       kSecAttrKeyType as String: kSecAttrKeyTypeRSA,
                                       kSecReturnRef as String: true]
        var item: CFTypeRef?
        let status = SecItemCopyMatching(getquery as CFDictionary, &item)
        guard status == errSecSuccess else { throw SnippetError.status(status) }
        let key = item as! SecKey
        return key
    }

    /// "Using Keys for Encryption": RSA-OAEP with SHA-512, after the article's support and length checks.
    public static func encrypt(_ plainText: Data, with publicKey: SecKey) throws -> Data {
        let algorithm: SecKeyAlgorithm = .rsaEncryptionOAEPSHA512
        guard SecKeyIsAlgorithmSupported(publicKey, .encrypt, algorithm) else { throw SnippetError.unsupported }
        guard plainText.count < (SecKeyGetBlockSize(publicKey) - 130) else { throw SnippetError.tooLong }
        var error: Unmanaged<CFError>?
        guard let cipherText = SecKeyCreateEncryptedData(publicKey, algorithm, plainText as CFData, &error) as Data? else {
            throw error!.takeRetainedValue() as Error
        }
        return cipherText
    }

    /// The decrypting half of the same article.
    public static func decrypt(_ cipherText: Data, with privateKey: SecKey) throws -> Data {
        let algorithm: SecKeyAlgorithm = .rsaEncryptionOAEPSHA512
        guard SecKeyIsAlgorithmSupported(privateKey, .decrypt, algorithm) else { throw SnippetError.unsupported }
        guard cipherText.count == SecKeyGetBlockSize(privateKey) else { throw SnippetError.tooLong }
        var error: Unmanaged<CFError>?
        guard let clearText = SecKeyCreateDecryptedData(privateKey, algorithm, cipherText as CFData, &error) as Data? else {
            throw error!.takeRetainedValue() as Error
        }
        return clearText
    }

    /// "Signing and Verifying": an ECDSA signature over the message, checked with the public key.
    public static func signAndVerify(_ data: Data) throws -> (signature: Data, verified: Bool, tamperedVerified: Bool) {
        let attributes: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                                         kSecAttrKeySizeInBits as String: 256]
        var error: Unmanaged<CFError>?
        guard let privateKey = SecKeyCreateRandomKey(attributes as CFDictionary, &error) else {
            throw error!.takeRetainedValue() as Error
        }
        let publicKey = SecKeyCopyPublicKey(privateKey)!
        let algorithm: SecKeyAlgorithm = .ecdsaSignatureMessageX962SHA256
        guard SecKeyIsAlgorithmSupported(privateKey, .sign, algorithm) else { throw SnippetError.unsupported }
        guard let signature = SecKeyCreateSignature(privateKey, algorithm, data as CFData, &error) as Data? else {
            throw error!.takeRetainedValue() as Error
        }
        let verified = SecKeyVerifySignature(publicKey, algorithm, data as CFData, signature as CFData, &error)
        var tampered = data
        tampered.append(0)
        let tamperedVerified = SecKeyVerifySignature(publicKey, algorithm, tampered as CFData, signature as CFData, &error)
        return (signature, verified, tamperedVerified)
    }

    /// "Storing Keys as Data": the external representation, and a key made again from it.
    public static func roundTrip(_ key: SecKey) throws -> SecKey {
        var error: Unmanaged<CFError>?
        guard let data = SecKeyCopyExternalRepresentation(key, &error) as Data? else {
            throw error!.takeRetainedValue() as Error
        }
        let options: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeRSA,
                                      kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
                                      kSecAttrKeySizeInBits as String: 2048]
        guard let key = SecKeyCreateWithData(data as CFData, options as CFDictionary, &error) else {
            throw error!.takeRetainedValue() as Error
        }
        return key
    }

    // MARK: SecCertificate.h

    /// "Storing a DER-Encoded X.509 Certificate", then reading it back by its label ("Getting a Certificate").
    public static func storeAndFindCertificate(_ certData: Data, label: String) throws -> SecCertificate {
        guard let certificate = SecCertificateCreateWithData(nil, certData as CFData) else {
            throw SnippetError.status(errSecDecode)
        }
        let addquery: [String: Any] = [kSecClass as String: kSecClassCertificate,
                                       kSecValueRef as String: certificate,
                                       kSecAttrLabel as String: label]
        let status = SecItemAdd(addquery as CFDictionary, nil)
        guard status == errSecSuccess else { throw SnippetError.status(status) }
        let getquery: [String: Any] = [kSecClass as String: kSecClassCertificate,
                                       kSecAttrLabel as String: label,
                                       kSecReturnRef as String: kCFBooleanTrue!]
        var item: CFTypeRef?
        let found = SecItemCopyMatching(getquery as CFDictionary, &item)
        guard found == errSecSuccess else { throw SnippetError.status(found) }
        return item as! SecCertificate
    }

    /// "Examining a Certificate": its summary, its key, its DER.
    public static func examine(_ certificate: SecCertificate) -> (summary: String?, keyBlockSize: Int?, der: Data) {
        let summary = SecCertificateCopySubjectSummary(certificate) as String?
        let key = SecCertificateCopyKey(certificate)
        let der = SecCertificateCopyData(certificate) as Data
        return (summary, key.map { SecKeyGetBlockSize($0) }, der)
    }

    // MARK: SecPolicy.h and SecTrust.h

    /// "Creating a Trust Object" and "Evaluating a Trust and Parsing the Result": an SSL policy for the host, the
    /// given anchors only, the error's code when not trusted.
    public static func evaluate(_ certificates: [SecCertificate], anchors: [SecCertificate], host: String) -> (trusted: Bool, code: Int?, result: SecTrustResultType) {
        let policy = SecPolicyCreateSSL(true, host as CFString)
        var optionalTrust: SecTrust?
        let status = SecTrustCreateWithCertificates(certificates as AnyObject, policy, &optionalTrust)
        guard status == errSecSuccess, let trust = optionalTrust else { return (false, Int(status), .invalid) }
        SecTrustSetAnchorCertificates(trust, anchors as CFArray)
        SecTrustSetAnchorCertificatesOnly(trust, true)
        var error: CFError?
        let trusted = SecTrustEvaluateWithError(trust, &error)
        var result = SecTrustResultType.invalid
        SecTrustGetTrustResult(trust, &result)
        return (trusted, error.map { CFErrorGetCode($0) }, result)
    }

    /// The same evaluation, asynchronously, as an app does off the main thread.
    public static func evaluateAsync(_ certificates: [SecCertificate], anchors: [SecCertificate], host: String,
                                     completion: @escaping @Sendable (Bool) -> Void) {
        var trust: SecTrust?
        SecTrustCreateWithCertificates(certificates as CFArray, SecPolicyCreateSSL(true, host as CFString), &trust)
        SecTrustSetAnchorCertificates(trust!, anchors as CFArray)
        SecTrustEvaluateAsyncWithError(trust!, DispatchQueue.global()) { _, result, _ in
            completion(result)
        }
    }

    /// A revocation policy next to the SSL one, as the revocation article adds it.
    public static func policies(host: String) -> [SecPolicy] {
        let ssl = SecPolicyCreateSSL(true, host as CFString)
        let revocation = SecPolicyCreateRevocation(kSecRevocationOCSPMethod | kSecRevocationRequirePositiveResponse)!
        return [ssl, revocation]
    }

    // MARK: SecRandom.h

    /// "Generating Random Numbers".
    public static func randomBytes(_ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        let status = SecRandomCopyBytes(kSecRandomDefault, bytes.count, &bytes)
        if status == errSecSuccess {
            return bytes
        }
        return nil
    }

    // MARK: SecImportExport.h (macOS)

    /// A PEM file's certificates and keys, as a macOS app reads one.
    public static func importPEM(_ pemData: Data) throws -> (format: SecExternalFormat, type: SecExternalItemType, items: [Any]) {
        var format = SecExternalFormat.formatUnknown
        var itemType = SecExternalItemType.itemTypeUnknown
        var items: CFArray?
        let status = SecItemImport(pemData as CFData, "pem" as CFString, &format, &itemType, [], nil, nil, &items)
        guard status == errSecSuccess else { throw SnippetError.status(status) }
        return (format, itemType, items as! [Any])
    }

    /// A certificate written out as PEM.
    public static func exportPEM(_ certificate: SecCertificate) throws -> String {
        var data: CFData?
        let status = SecItemExport(certificate, .formatX509Cert, .pemArmour, nil, &data)
        guard status == errSecSuccess else { throw SnippetError.status(status) }
        return String(data: data! as Data, encoding: .utf8)!
    }

    // MARK: SecSharedCredential.h (iOS)

    /// Asking for the user's saved passwords for the app's domains.
    public static func requestSharedCredentials(completion: @escaping (OSStatus) -> Void) {
        SecRequestSharedWebCredential(nil, nil) { credentials, error in
            if let error = error {
                completion(OSStatus(CFErrorGetCode(error)))
                return
            }
            completion(credentials == nil ? errSecItemNotFound : errSecSuccess)
        }
    }
}
