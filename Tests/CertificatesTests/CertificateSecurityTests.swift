import Foundation
import Keychain
import Security
import TestVectors
import Testing

/// SecCertificate and certificates in the keychain as an Apple-platform client uses them: `import Security`,
/// CFData, `as CFDictionary`, OSStatus. Each test has a default keychain of its own (`.isolatedKeychain`).
@Suite("Security: SecCertificate and certificate items", .isolatedKeychain(["com.example.app"]))
struct CertificateSecurityTests {
    let fixtures: GeneratedFixtures
    let directory: URL

    init() throws {
        fixtures = try GeneratedFixtures()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("seccert-\(UUID().uuidString)")
    }

    func certificate(_ name: String) throws -> SecCertificate {
        try #require(SecCertificateCreateWithData(nil, try fixtures.der(name) as CFData))
    }

    @Test("SecCertificateCreateWithData takes exactly one DER certificate; the Copy functions answer as Apple's")
    func certificateFunctions() throws {
        let der = try fixtures.der("leaf")
        #expect(SecCertificateCreateWithData(kCFAllocatorDefault, Data(try fixtures.pem("leaf").utf8) as CFData) == nil)
        #expect(SecCertificateCreateWithData(nil, (der + [0]) as CFData) == nil)
        #expect(SecCertificateCreateWithData(nil, (der + (try fixtures.der("ca"))) as CFData) == nil)
        #expect(SecCertificateCreateWithData(nil, der.prefix(100) as CFData) == nil)
        #expect(SecCertificateCreateWithData(nil, Data() as CFData) == nil)
        #expect(SecCertificateCreateWithData(nil, Data(repeating: 0x30, count: 64) as CFData) == nil)

        let leaf = try certificate("leaf")
        #expect(SecCertificateCopyData(leaf) as Data == der)
        #expect(SecCertificateCopySubjectSummary(leaf) as String? == "Unit Two, Unit One")

        var commonName: CFString?
        #expect(SecCertificateCopyCommonName(leaf, &commonName) == -26276)  // Apple's errSecInternal: no CN
        #expect(commonName == nil)
        let multi = try certificate("multicn")
        #expect(SecCertificateCopyCommonName(multi, &commonName) == errSecSuccess)
        #expect(commonName as String? == "second name")

        var emails: CFArray?
        #expect(SecCertificateCopyEmailAddresses(leaf, &emails) == errSecSuccess)
        #expect(emails as? [String] == ["san@example.com", "subject@example.com"])
        #expect(SecCertificateCopyEmailAddresses(multi, &emails) == errSecSuccess)
        #expect((emails as? [String])?.isEmpty == true)

        var error: Unmanaged<CFError>?
        #expect(SecCertificateCopySerialNumberData(leaf, &error) as Data? == Data([0x00, 0xFF, 0x01]))
        #expect(error == nil)
        #expect(SecCertificateCopySerialNumberData(multi, nil) as Data? == Data([0x02]))

        let ca = try certificate("ca")
        #expect(
            SecCertificateCopyNormalizedIssuerSequence(leaf) as Data? == SecCertificateCopyNormalizedSubjectSequence(ca)
                as Data?)
        #expect(
            SecCertificateCopyNormalizedSubjectSequence(leaf) as Data? != SecCertificateCopyNormalizedSubjectSequence(
                ca) as Data?)
        #expect(leaf == (try certificate("leaf")))
        #expect(leaf != ca)
    }

    @Test("SecItemAdd with kSecValueRef stores the certificate; a second add is errSecDuplicateItem")
    func addAndDuplicate() throws {
        let leaf = try certificate("leaf")
        let add: [String: Any] = [kSecClass as String: kSecClassCertificate, kSecValueRef as String: leaf]
        #expect(SecItemAdd(add as CFDictionary, nil) == errSecSuccess)
        #expect(SecItemAdd(add as CFDictionary, nil) == errSecDuplicateItem)
        // Without kSecClass too (the class comes from the reference), still the same item.
        #expect(SecItemAdd([kSecValueRef as String: leaf] as CFDictionary, nil) == errSecDuplicateItem)
        #expect(
            SecItemAdd(
                [kSecClass as String: kSecClassCertificate, kSecValueRef as String: try certificate("ca")]
                    as CFDictionary, nil) == errSecSuccess)

        // The attributes Apple derives.
        var result: CFTypeRef?
        let query: [String: Any] = [
            kSecClass as String: kSecClassCertificate, kSecValueRef as String: leaf,
            kSecReturnAttributes as String: true,
            kSecReturnData as String: true,
        ]
        #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
        let attributes = try #require(result as? [String: Any])
        #expect(attributes[kSecValueData as String] as? Data == (try fixtures.der("leaf")))
        #expect((attributes[kSecAttrCertificateType as String] as? NSNumber)?.intValue == 3)
        #expect((attributes["cenc"] as? NSNumber)?.intValue == 3)
        #expect(attributes[kSecAttrLabel as String] as? String == "Unit Two, Unit One")
        #expect(
            attributes[kSecAttrIssuer as String] as? Data == SecCertificateCopyNormalizedIssuerSequence(leaf) as Data?)
        #expect(attributes["subj"] as? Data == SecCertificateCopyNormalizedSubjectSequence(leaf) as Data?)
        #expect(attributes[kSecAttrSerialNumber as String] as? Data == Data([0x00, 0xFF, 0x01]))
        #expect(attributes[kSecAttrSubjectKeyID as String] as? Data == leaf.certificate.subjectKeyIdentifier)
        #expect(attributes[kSecAttrPublicKeyHash as String] as? Data == leaf.certificate.publicKeyHash)

        // Delete by reference, then it is gone.
        #expect(
            SecItemDelete([kSecClass as String: kSecClassCertificate, kSecValueRef as String: leaf] as CFDictionary)
                == errSecSuccess)
        #expect(
            SecItemCopyMatching(
                [kSecClass as String: kSecClassCertificate, kSecValueRef as String: leaf] as CFDictionary, nil)
                == errSecItemNotFound)
        #expect(SecItemAdd(add as CFDictionary, nil) == errSecSuccess)
    }

    @Test("CopyMatching by label, by issuer + serial, by public key hash returns a SecCertificate with the same DER")
    func copyMatching() throws {
        let leaf = try certificate("leaf")
        let ca = try certificate("ca")
        let multi = try certificate("multicn")
        // "Storing a Certificate in the Keychain": the label given wins over the derived one.
        let add: [String: Any] = [
            kSecClass as String: kSecClassCertificate, kSecValueRef as String: leaf,
            kSecAttrLabel as String: "My Certificate",
        ]
        #expect(SecItemAdd(add as CFDictionary, nil) == errSecSuccess)
        for other in [ca, multi] {
            #expect(
                SecItemAdd(
                    [kSecClass as String: kSecClassCertificate, kSecValueRef as String: other] as CFDictionary, nil)
                    == errSecSuccess)
        }

        var item: CFTypeRef?
        let byLabel: [String: Any] = [
            kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: "My Certificate",
            kSecReturnRef as String: kCFBooleanTrue as Any,
        ]
        #expect(SecItemCopyMatching(byLabel as CFDictionary, &item) == errSecSuccess)
        let found = try #require(item as? SecCertificate)
        #expect(SecCertificateCopyData(found) as Data == SecCertificateCopyData(leaf) as Data)

        // The derived label (the subject summary) of a certificate added without one.
        let byDerivedLabel: [String: Any] = [
            kSecClass as String: kSecClassCertificate,
            kSecAttrLabel as String: "second name, first name (the description)", kSecReturnRef as String: true,
        ]
        #expect(SecItemCopyMatching(byDerivedLabel as CFDictionary, &item) == errSecSuccess)
        #expect(
            (item as? SecCertificate).map { SecCertificateCopyData($0) as Data } == SecCertificateCopyData(multi)
                as Data)

        // Issuer + serial, Apple's uniqueness: the normalized issuer and the serial bytes.
        let issuerSerial: [String: Any] = [
            kSecClass as String: kSecClassCertificate,
            kSecAttrIssuer as String: SecCertificateCopyNormalizedIssuerSequence(multi) as Any,
            kSecAttrSerialNumber as String: SecCertificateCopySerialNumberData(multi, nil) as Any,
            kSecReturnRef as String: true,
        ]
        #expect(SecItemCopyMatching(issuerSerial as CFDictionary, &item) == errSecSuccess)
        #expect((item as? SecCertificate)?.certificate.derEncoded == multi.certificate.derEncoded)

        // Public key hash (how Apple pairs a certificate with its private key).
        let byKeyHash: [String: Any] = [
            kSecClass as String: kSecClassCertificate, kSecAttrPublicKeyHash as String: ca.certificate.publicKeyHash,
            kSecReturnRef as String: true,
        ]
        #expect(SecItemCopyMatching(byKeyHash as CFDictionary, &item) == errSecSuccess)
        #expect(
            (item as? SecCertificate).map { SecCertificateCopyData($0) as Data } == SecCertificateCopyData(ca) as Data)

        // Every certificate issued by the CA: the two leaves.
        let byIssuer: [String: Any] = [
            kSecClass as String: kSecClassCertificate,
            kSecAttrIssuer as String: SecCertificateCopyNormalizedSubjectSequence(ca) as Any,
            kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnRef as String: true,
        ]
        #expect(SecItemCopyMatching(byIssuer as CFDictionary, &item) == errSecSuccess)
        let all = try #require(item as? [SecCertificate])
        #expect(
            Set(all.map { SecCertificateCopyData($0) as Data })
                == Set([leaf, multi, ca].map { SecCertificateCopyData($0) as Data }))

        let missing: [String: Any] = [
            kSecClass as String: kSecClassCertificate, kSecAttrSerialNumber as String: Data([0x7F]),
            kSecReturnRef as String: true,
        ]
        #expect(SecItemCopyMatching(missing as CFDictionary, &item) == errSecItemNotFound)
    }
}
