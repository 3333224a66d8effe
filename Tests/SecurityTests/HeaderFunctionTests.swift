import Foundation
import Keychain
import Security
import TestVectors
import Testing

extension NSData {
    /// The bytes, as Data.
    fileprivate var bytesCopy: Data { Data(referencing: self) }
}

/// Functions Apple's headers declare, checked against OpenSSL's command line
/// (an independent implementation) where it can tell: ECDH and X9.63 against `openssl pkeyutl -derive` and
/// `openssl kdf`, export against `openssl x509`/`pkcs12`/`pkey`, certificate fields against `openssl x509`.
@Suite("Security: header functions (import/export, ECDH, certificate fields, policies, trust, identities)", .isolatedKeychain(["com.example.header"]))
struct HeaderFunctionTests {
    /// A self-signed P-256 certificate and its key, made by the openssl CLI.
    static func makeIdentity(_ directory: TemporaryDirectory, _ name: String = "Header Test") throws -> (certificate: Data, key: Data) {
        _ = try OpenSSLCLI.require([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "key.pem", "-out", "cert.pem",
            "-subj", "/CN=\(name)/O=Example", "-days", "30", "-addext", "subjectAltName=DNS:header.example",
        ], in: directory.url)
        return (try directory.read("cert.pem"), try directory.read("key.pem"))
    }

    static func importItems(_ data: Data, passphrase: String? = nil, format: SecExternalFormat = .formatUnknown) -> (OSStatus, [AnyObject], SecExternalFormat, SecExternalItemType) {
        // The passphrase object outlives the call: the parameter block holds it unretained, as Apple's.
        let passphraseObject = passphrase.map { $0 as NSString }
        var parameters = SecItemImportExportKeyParameters()
        parameters.passphrase = passphraseObject.map { Unmanaged.passUnretained($0 as CFTypeRef) }
        var items: CFArray?
        var inputFormat = format
        var itemType = SecExternalItemType.itemTypeUnknown
        let status = withExtendedLifetime(passphraseObject) {
            withUnsafePointer(to: &parameters) { SecItemImport(data as CFData, nil, &inputFormat, &itemType, [], $0, nil, &items) }
        }
        return (status, (items as? [AnyObject]) ?? [], inputFormat, itemType)
    }

    @Test("SecItemImport reads openssl's PEM certificate and key; SecItemExport writes what openssl reads back byte for byte")
    func importExport() throws {
        let directory = try TemporaryDirectory("import")
        let (certificatePEM, keyPEM) = try Self.makeIdentity(directory)
        let (status, items, format, type) = Self.importItems(certificatePEM + keyPEM)
        #expect(status == errSecSuccess && format == .formatPEMSequence && type == .itemTypeAggregate)
        let certificate = try #require(items.compactMap { $0 as? SecCertificate }.first)
        let key = try #require(items.compactMap { $0 as? SecKey }.first)
        // The certificate as DER: what `openssl x509 -outform DER` writes.
        var exported: CFData?
        #expect(SecItemExport(certificate, .formatX509Cert, [], nil, &exported) == errSecSuccess)
        let der = try OpenSSLCLI.require(["x509", "-in", "cert.pem", "-outform", "DER"], in: directory.url).stdout
        #expect(exported.map { Data($0) } == der)
        // The private key in OpenSSL's traditional form: `openssl pkey` gives the same public key.
        #expect(SecItemExport(key, .formatOpenSSL, .pemArmour, nil, &exported) == errSecSuccess)
        try directory.write("exported.pem", String(decoding: Data(try #require(exported)), as: UTF8.self))
        let ours = try OpenSSLCLI.require(["pkey", "-in", "exported.pem", "-pubout"], in: directory.url).text
        let theirs = try OpenSSLCLI.require(["pkey", "-in", "key.pem", "-pubout"], in: directory.url).text
        #expect(ours == theirs && ours.contains("BEGIN PUBLIC KEY"))
        // A PKCS#12 with a passphrase, which openssl opens with it.
        let identity = try #require(SecIdentityCreate(nil, certificate, key))
        var parameters = SecItemImportExportKeyParameters()
        #expect(SecItemExport(identity, .formatPKCS12, [], &parameters, &exported) == errSecPassphraseRequired)
        let secret: NSString = "p12 secret"
        parameters.passphrase = Unmanaged.passUnretained(secret as CFTypeRef)
        withExtendedLifetime(secret) { #expect(SecItemExport(identity, .formatPKCS12, [], &parameters, &exported) == errSecSuccess) }
        let p12 = Data(try #require(exported))
        try p12.write(to: directory.url.appendingPathComponent("out.p12"))
        let opened = try OpenSSLCLI.require(["pkcs12", "-in", "out.p12", "-passin", "pass:p12 secret", "-nokeys"], in: directory.url).text
        #expect(opened.contains("CN = Header Test") || opened.contains("CN=Header Test"))
        // And back: the right passphrase gives the identity, a wrong one errSecAuthFailed, none errSecPassphraseRequired.
        let back = Self.importItems(p12, passphrase: "p12 secret")
        #expect(back.0 == errSecSuccess && back.2 == .formatPKCS12)
        #expect((back.1.first as? SecIdentity)?.certificate == certificate)
        #expect(Self.importItems(p12, passphrase: "wrong").0 == errSecAuthFailed)
        #expect(Self.importItems(p12, format: SecExternalFormat.formatPKCS12).0 == errSecPassphraseRequired)
    }

    @Test("bad import input: Apple's statuses, nothing returned; an import into a keychain adds the items")
    func importFailures() throws {
        #expect(Self.importItems(Data("not a certificate".utf8)).0 == errSecUnknownFormat)
        #expect(Self.importItems(Data("-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n".utf8)).0 == errSecDecode)
        #expect(Self.importItems(Data("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAA==\n-----END ENCRYPTED PRIVATE KEY-----\n".utf8)).0 == errSecUnsupportedFormat)
        #expect(Self.importItems(Data([0x30, 0x03, 0x02, 0x01, 0x03]), format: .formatSSH).0 == errSecUnsupportedFormat)
        var exported: CFData?
        #expect(SecItemExport("text" as CFString, .formatX509Cert, [], nil, &exported) == errSecParam && exported == nil)

        // Into a keychain of the test's own (a plain one: SecKeychainLockAll, which other suites call, leaves it be).
        let directory = try TemporaryDirectory("import-keychain")
        let (certificatePEM, _) = try Self.makeIdentity(directory, "Imported Into Keychain")
        let path = directory.path("import.keychain")
        _ = try KeychainStore(path: path, accessGroups: ["com.example.header"])
        var keychain: SecKeychain?
        #expect(SecKeychainOpen(path, &keychain) == errSecSuccess)
        var items: CFArray?
        #expect(SecItemImport(certificatePEM as CFData, ".pem" as CFString, nil, nil, [], nil, keychain, &items) == errSecSuccess)
        var found: CFTypeRef?
        let query: [String: Any] = [
            kSecClass as String: kSecClassCertificate, kSecMatchSearchList as String: [try #require(keychain)], kSecReturnRef as String: true,
        ]
        #expect(SecItemCopyMatching(query as CFDictionary, &found) == errSecSuccess)
        #expect((found as? SecCertificate) == (items as? [AnyObject])?.first as? SecCertificate)
        // Nothing went to the test's default keychain.
        #expect(SecItemCopyMatching([kSecClass as String: kSecClassCertificate] as CFDictionary, nil) == errSecItemNotFound)
    }

    @Test("SecKeyCopyKeyExchangeResult: ECDH equals openssl pkeyutl -derive; the X9.63 variants equal openssl kdf X963KDF")
    func keyExchange() throws {
        let directory = try TemporaryDirectory("ecdh")
        let attributes: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256]
        let alice = try #require(SecKeyCreateRandomKey(attributes as CFDictionary, nil))
        let bob = try #require(SecKeyCreateRandomKey(attributes as CFDictionary, nil))
        let alicePublic = try #require(SecKeyCopyPublicKey(alice)), bobPublic = try #require(SecKeyCopyPublicKey(bob))
        #expect(SecKeyIsAlgorithmSupported(alice, .keyExchange, .ecdhKeyExchangeStandard))
        #expect(!SecKeyIsAlgorithmSupported(alicePublic, .keyExchange, .ecdhKeyExchangeStandard))
        let empty = NSDictionary()
        let z = try #require(SecKeyCopyKeyExchangeResult(alice, .ecdhKeyExchangeStandard, bobPublic, empty, nil)).bytesCopy
        #expect(z.count == 32)
        #expect(SecKeyCopyKeyExchangeResult(bob, .ecdhKeyExchangeCofactor, alicePublic, empty, nil).map { Data($0) } == z)
        // openssl, from the keys exported here.
        for (name, key) in [("alice.pem", alice), ("bob.pub.pem", bobPublic)] {
            var exported: CFData?
            #expect(SecItemExport(key, .formatOpenSSL, .pemArmour, nil, &exported) == errSecSuccess)
            try directory.write(name, String(decoding: Data(try #require(exported)), as: UTF8.self))
        }
        let derived = try OpenSSLCLI.require(["pkeyutl", "-derive", "-inkey", "alice.pem", "-peerkey", "bob.pub.pem"], in: directory.url).stdout
        #expect(derived == z)
        // X9.63 with SHA-256, 42 bytes, shared info: as `openssl kdf X963KDF` computes it from the same Z.
        let info = Data("header test".utf8)
        let parameters = [SecKeyKeyExchangeParameter.requestedSize.rawValue: 42, SecKeyKeyExchangeParameter.sharedInfo.rawValue: info] as NSDictionary
        let kdf = try #require(SecKeyCopyKeyExchangeResult(alice, .ecdhKeyExchangeStandardX963SHA256, bobPublic, parameters, nil)).bytesCopy
        let hex = { (data: Data) in data.map { String(format: "%02x", $0) }.joined() }
        let expected = try OpenSSLCLI.require([
            "kdf", "-keylen", "42", "-kdfopt", "digest:SHA256", "-kdfopt", "hexsecret:\(hex(z))", "-kdfopt", "hexinfo:\(hex(info))", "X963KDF",
        ]).text.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: ":", with: "").lowercased()
        #expect(hex(kdf) == expected)
        // Bad requests: errSecParam, nil.
        var error: Unmanaged<CFError>?
        #expect(SecKeyCopyKeyExchangeResult(alice, .ecdhKeyExchangeStandardX963SHA256, bobPublic, empty, &error) == nil)
        #expect(error.map { CFErrorGetCode($0.takeRetainedValue()) } == Int(errSecParam))
        #expect(SecKeyCopyKeyExchangeResult(alicePublic, .ecdhKeyExchangeStandard, bobPublic, empty, nil) == nil)
        #expect(SecKeyCopyKeyExchangeResult(alice, .rsaEncryptionOAEPSHA256, bobPublic, empty, nil) == nil)
    }

    @Test("certificate fields agree with openssl x509: validity dates, serial number, normalized names, values; both CopyPublicKey forms")
    func certificateFields() throws {
        let directory = try TemporaryDirectory("fields")
        let (certificatePEM, _) = try Self.makeIdentity(directory)
        let certificate = try #require(Self.importItems(certificatePEM).1.first as? SecCertificate)
        let dates = try OpenSSLCLI.require(["x509", "-in", "cert.pem", "-noout", "-startdate", "-enddate", "-serial"], in: directory.url).text
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "MMM d HH:mm:ss yyyy 'GMT'"
        func field(_ name: String) -> String? {
            dates.split(separator: "\n").first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)).replacingOccurrences(of: "  ", with: " ") }
        }
        #expect((SecCertificateCopyNotValidBeforeDate(certificate) as Date?) == field("notBefore").flatMap(formatter.date))
        #expect((SecCertificateCopyNotValidAfterDate(certificate) as Date?) == field("notAfter").flatMap(formatter.date))
        let serial = try #require(SecCertificateCopySerialNumber(certificate)).bytesCopy
        #expect(serial.map { String(format: "%02X", $0) }.joined() == field("serial"))
        #expect(SecCertificateCopySerialNumber(certificate, nil).map { Data($0) } == serial)
        // The content is the sequence without its header.
        let sequence = try #require(SecCertificateCopyNormalizedSubjectSequence(certificate)).bytesCopy
        let content = try #require(SecCertificateCopyNormalizedSubjectContent(certificate, nil)).bytesCopy
        #expect(sequence.count > content.count && sequence.suffix(content.count) == content && sequence.first == 0x30)
        #expect(SecCertificateCopyNormalizedIssuerContent(certificate, nil).map { Data($0) } == content)  // self-signed
        let values = try #require(SecCertificateCopyValues(certificate, ["2.5.29.17"] as CFArray, nil))
        #expect(values.count == 1)
        let san = try #require(values["2.5.29.17"] as? NSDictionary)
        #expect((san[kSecPropertyKeyValue] as? NSArray)?.contains("header.example") == true)
        var error: Unmanaged<CFError>?
        #expect(SecCertificateCopyValues(certificate, [42] as CFArray, &error) == nil && error != nil)
        _ = error?.takeRetainedValue()
        #expect((SecCertificateCopyShortDescription(nil, certificate, nil) as String?) == "Header Test")
        #expect((SecCertificateCopyLongDescription(nil, certificate, nil) as String?)?.contains("SHA-256 Fingerprint") == true)
        var key: SecKey?
        #expect(SecCertificateCopyPublicKey(certificate, &key) == errSecSuccess)
        #expect(key.flatMap { SecKeyCopyExternalRepresentation($0, nil) }.map { Data($0) }
            == SecCertificateCopyPublicKey(certificate).flatMap { SecKeyCopyExternalRepresentation($0, nil) }.map { Data($0) })
    }

    @Test("SecPolicyCreateWithProperties and SecPolicySetProperties: the SSL name and side, revocation flags; bad input refused")
    func policies() throws {
        let ssl = try #require(SecPolicyCreateWithProperties(kSecPolicyAppleSSL, [kSecPolicyName: "a.example"] as CFDictionary))
        #expect((SecPolicyCopyProperties(ssl)[kSecPolicyName] as? String) == "a.example")
        #expect(SecPolicySetProperties(ssl, [kSecPolicyName: "b.example"] as CFDictionary) == errSecSuccess)
        #expect((SecPolicyCopyProperties(ssl)[kSecPolicyName] as? String) == "b.example")
        #expect(SecPolicySetProperties(ssl, [kSecPolicyName: 7] as CFDictionary) == errSecParam)
        #expect(SecPolicySetProperties(ssl, [kSecPolicyOid: kSecPolicyAppleX509Basic] as CFDictionary) == errSecParam)
        #expect((SecPolicyCopyProperties(ssl)[kSecPolicyName] as? String) == "b.example", "a refused change changes nothing")
        let client = try #require(SecPolicyCreateWithProperties(kSecPolicyAppleSSL, [kSecPolicyClient: true] as CFDictionary))
        #expect(SecPolicyCopyProperties(client)[kSecPolicyClient] != nil)
        let revocation = try #require(SecPolicyCreateWithProperties(kSecPolicyAppleRevocation, nil))
        #expect((SecPolicyCopyProperties(revocation)[kSecPolicyRevocationFlags] as? NSNumber)?.uintValue == kSecRevocationUseAnyAvailableMethod)
        #expect(SecPolicyCreateWithOID(kSecPolicyAppleX509Basic) == SecPolicyCreateBasicX509())
        #expect(SecPolicyCreateWithProperties(kSecPolicyAppleSMIME, nil) == nil)
        #expect(SecPolicyCreateWithProperties(kSecPolicyAppleRevocation, [kSecPolicyRevocationFlags: 0] as CFDictionary) == nil)
    }

    @Test("trust: system anchors, keychains searched, SCTs, the CSSM result code of the last evaluation, the deprecated async form")
    func trust() async throws {
        var anchors: CFArray?
        #expect(SecTrustCopyAnchorCertificates(&anchors) == errSecSuccess)
        #expect((anchors?.count ?? 0) > 10, "Debian's ca-certificates bundle")
        let directory = try TemporaryDirectory("trust")
        let certificate = try #require(Self.importItems(try Self.makeIdentity(directory).certificate).1.first as? SecCertificate)
        var trust: SecTrust?
        #expect(SecTrustCreateWithCertificates(certificate, SecPolicyCreateBasicX509(), &trust) == errSecSuccess)
        let unwrapped = try #require(trust)
        #expect(SecTrustSetKeychains(unwrapped, "not a keychain" as CFString) == errSecParam)
        #expect(SecTrustSetKeychains(unwrapped, [] as CFArray) == errSecSuccess)
        #expect(SecTrustSetSignedCertificateTimestamps(unwrapped, ["x"] as CFArray) == errSecParam)
        #expect(SecTrustSetSignedCertificateTimestamps(unwrapped, [Data([1, 2, 3])] as CFArray) == errSecSuccess)
        var code: OSStatus = 0
        #expect(SecTrustGetCssmResultCode(unwrapped, &code) == errSecTrustNotAvailable)
        var error: CFError?
        #expect(!SecTrustEvaluateWithError(unwrapped, &error))
        #expect(SecTrustGetCssmResultCode(unwrapped, &code) == errSecSuccess)
        #expect(code != errSecSuccess && Int(code) == error.map { CFErrorGetCode($0) })
        let result = await withCheckedContinuation { continuation in
            _ = SecTrustEvaluateAsync(unwrapped, DispatchQueue.global()) { _, type in continuation.resume(returning: type) }
        }
        #expect(result == .recoverableTrustFailure)
    }

    @Test("identities: SecIdentityCreate, SecIdentityCreateWithCertificate from the keychain, preferred certificates and identities")
    func identities() throws {
        let directory = try TemporaryDirectory("identity")
        let (certificatePEM, keyPEM) = try Self.makeIdentity(directory, "Preferred Identity")
        let items = Self.importItems(certificatePEM + keyPEM).1
        let certificate = try #require(items.compactMap { $0 as? SecCertificate }.first)
        let key = try #require(items.compactMap { $0 as? SecKey }.first)
        #expect(SecIdentityCreate(nil, certificate, try #require(SecKeyCopyPublicKey(key))) == nil)
        let identity = try #require(SecIdentityCreate(nil, certificate, key))
        var found: SecIdentity?
        #expect(SecIdentityCreateWithCertificate(nil, certificate, &found) == errSecItemNotFound)
        #expect(SecItemAdd([kSecValueRef as String: identity] as CFDictionary, nil) == errSecSuccess)
        #expect(SecIdentityCreateWithCertificate(nil, certificate, &found) == errSecSuccess)
        #expect(found?.certificate == certificate)
        #expect(SecIdentityCreateWithCertificate(42 as CFNumber, certificate, &found) == errSecParam)
        // Preferences: set, read back, replaced, removed.
        #expect(SecCertificateCopyPreferred("mail.example" as CFString, nil) == nil)
        #expect(SecCertificateSetPreferred(certificate, "mail.example" as CFString, nil) == errSecSuccess)
        #expect(SecCertificateCopyPreferred("mail.example" as CFString, nil) == certificate)
        var preferred: SecCertificate?
        #expect(SecCertificateCopyPreference("mail.example" as CFString, 0, &preferred) == errSecSuccess && preferred == certificate)
        #expect(SecIdentitySetPreferred(identity, "https://header.example/" as CFString, nil) == errSecSuccess)
        #expect(SecIdentityCopyPreferred("https://header.example/" as CFString, nil, nil)?.certificate == certificate)
        #expect(SecIdentityCopyPreferred("https://header.example/" as CFString, nil, [Data([0x30, 0x00])] as CFArray) == nil)
        #expect(SecCertificateSetPreferred(nil, "mail.example" as CFString, nil) == errSecSuccess)
        #expect(SecCertificateCopyPreferred("mail.example" as CFString, nil) == nil)
        #expect(SecCertificateCopyPreference("mail.example" as CFString, 0, &preferred) == errSecItemNotFound)
        #expect(SecCertificateSetPreferred(certificate, "" as CFString, nil) == errSecParam)
    }

    @Test("macOS symmetric SecKeys and SecKeyWrap/UnwrapSymmetric answer errSecUnimplemented; SecKeyGeneratePairAsync delivers a pair")
    func legacyKeys() async throws {
        var error: Unmanaged<CFError>?
        #expect(SecKeyGenerateSymmetric([kSecAttrKeyType: "AES"] as CFDictionary, &error) == nil)
        #expect(error.map { CFErrorGetCode($0.takeRetainedValue()) } == Int(errSecUnimplemented))
        let pair: (SecKey?, SecKey?, Int?) = await withCheckedContinuation { continuation in
            SecKeyGeneratePairAsync(
                [kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 256] as CFDictionary, DispatchQueue.global()
            ) { publicKey, privateKey, error in
                continuation.resume(returning: (publicKey, privateKey, error.map { CFErrorGetCode($0) }))
            }
        }
        #expect(pair.0 != nil && pair.1 != nil && pair.2 == nil)
        let failed: Int? = await withCheckedContinuation { continuation in
            SecKeyGeneratePairAsync([kSecAttrKeyType: "nonsense"] as CFDictionary, DispatchQueue.global()) { _, _, error in
                continuation.resume(returning: error.map { CFErrorGetCode($0) })
            }
        }
        #expect(failed == Int(errSecParam))
    }

    @Test("the CSSM-era calls: a certificate from a CSSM_DATA and its DER at a fixed address, its type, the older preference and trust-result forms; the rest errSecUnimplemented")
    func cssmCalls() throws {
        let directory = try TemporaryDirectory("cssm")
        let (certificatePEM, keyPEM) = try Self.makeIdentity(directory, "CSSM Identity")
        let der = try OpenSSLCLI.require(["x509", "-in", "cert.pem", "-outform", "DER"], in: directory.url).stdout
        var made: SecCertificate?
        let status = der.withUnsafeBytes { raw -> OSStatus in
            var item = SecAsn1Item(Length: raw.count, Data: UnsafeMutablePointer(mutating: raw.bindMemory(to: UInt8.self).baseAddress))
            return SecCertificateCreateFromData(&item, CSSM_CERT_TYPE(CSSM_CERT_X_509v3), CSSM_CERT_ENCODING(CSSM_CERT_ENCODING_DER), &made)
        }
        #expect(status == errSecSuccess)
        let certificate = try #require(made)
        var junk = SecAsn1Item(Length: 3, Data: nil)
        #expect(SecCertificateCreateFromData(&junk, 3, 3, &made) == errSecParam && made == nil)
        var data = SecAsn1Item(Length: 0, Data: nil)
        #expect(SecCertificateGetData(certificate, &data) == errSecSuccess)
        #expect(Data(bytes: try #require(data.Data), count: data.Length) == der)
        var again = SecAsn1Item(Length: 0, Data: nil)
        SecCertificateGetData(certificate, &again)
        #expect(again.Data == data.Data, "the same memory for the certificate's life")
        var type: CSSM_CERT_TYPE = 0
        #expect(SecCertificateGetType(certificate, &type) == errSecSuccess && type == 3)
        // The older preference forms, over the keychain.
        let key = try #require(Self.importItems(certificatePEM + keyPEM).1.compactMap { $0 as? SecKey }.first)
        let identity = try #require(SecIdentityCreate(nil, certificate, key))
        #expect(SecItemAdd([kSecValueRef as String: identity] as CFDictionary, nil) == errSecSuccess)
        #expect(SecIdentitySetPreference(identity, "cssm.example" as CFString, 0) == errSecSuccess)
        var preferred: SecIdentity?
        #expect(SecIdentityCopyPreference("cssm.example" as CFString, 0, nil, &preferred) == errSecSuccess)
        #expect(preferred?.certificate == certificate)
        #expect(SecIdentityCopyPreference("other.example" as CFString, 0, nil, &preferred) == errSecItemNotFound && preferred == nil)
        // The trust result, before and after an evaluation.
        var trust: SecTrust?
        #expect(SecTrustCreateWithCertificates(certificate, SecPolicyCreateBasicX509(), &trust) == errSecSuccess)
        let unwrapped = try #require(trust)
        var result = SecTrustResultType.invalid
        var chain: CFArray?
        var evidence: UnsafeMutablePointer<CSSM_TP_APPLE_EVIDENCE_INFO>?
        #expect(SecTrustGetResult(unwrapped, &result, &chain, &evidence) == errSecTrustNotAvailable)
        SecTrustSetAnchorCertificates(unwrapped, [certificate] as CFArray)
        #expect(SecTrustEvaluateWithError(unwrapped, nil))
        #expect(SecTrustGetResult(unwrapped, &result, &chain, &evidence) == errSecSuccess)
        #expect(result == .unspecified && (chain as? [SecCertificate]) == [certificate] && evidence == nil)
        // CSSM modules, keys, credentials and parsed names do not exist here.
        var name: UnsafePointer<CSSM_X509_NAME>?
        var handle: CSSM_TP_HANDLE = 7
        var cssmKey: UnsafePointer<CSSM_KEY>?
        #expect(SecCertificateGetSubject(certificate, &name) == errSecUnimplemented && name == nil)
        #expect(SecTrustGetTPHandle(unwrapped, &handle) == errSecUnimplemented && handle == 0)
        #expect(SecKeyGetCSSMKey(key, &cssmKey) == errSecUnimplemented && cssmKey == nil)
        #expect(SecTrustSetParameters(unwrapped, 0, Data() as CFData) == errSecUnimplemented)
    }
}
