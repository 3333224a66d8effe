import CertificateManager
import Certificates
import Foundation
import Keychain
import TestVectors
import Testing

@Suite("Private trust store")
struct TrustStoreTests {
    @Test("create, immutable, delete, recreate")
    func lifecycle() throws {
        let world = try ManagerWorld()
        let root = try world.root()
        let other = try world.root("other", subject: "/CN=Other Root")
        let manager = CertificateManager(keychain: try world.keychain())
        #expect(try manager.isCertificateStoreInUse == false)
        #expect(try manager.certificates.isEmpty)

        try manager.setCertificates([root])
        #expect(try manager.isCertificateStoreInUse)
        #expect(try manager.certificates == [root])

        // Created once: a second call fails and changes nothing.
        #expect(throws: CertificateManagerError(.certificateStoreImmutable, "")) {
            try manager.setCertificates([other])
        }
        #expect(throws: CertificateManagerError(.certificateStoreImmutable, "")) {
            try manager.setCertificates([root, other])
        }
        #expect(try manager.certificates == [root])

        #expect(try manager.deleteCertStore())
        #expect(try manager.isCertificateStoreInUse == false)
        #expect(try manager.deleteCertStore() == false)

        try manager.setCertificates([other, root])
        #expect(Set(try manager.certificates) == [root, other])
    }

    @Test("a non-CA is refused by name, and nothing is stored")
    func nonCARefused() throws {
        let world = try ManagerWorld()
        let root = try world.root()
        let leaf = try world.leaf("leaf", commonName: "not-a-ca.example")
        let manager = CertificateManager(keychain: try world.keychain())
        let error = #expect(throws: CertificateManagerError(.notCertificateAuthority, "")) {
            try manager.setCertificates([root, leaf])
        }
        #expect(error?.certificateSubject == "not-a-ca.example")
        #expect(try manager.isCertificateStoreInUse == false)
        #expect(throws: CertificateManagerError(.emptyCertificateStore, "")) { try manager.setCertificates([]) }
    }

    @Test("the store persists: another manager on the same keychain file sees it")
    func persistence() throws {
        let world = try ManagerWorld()
        let root = try world.root()
        do {
            try CertificateManager(keychain: try world.keychain()).setCertificates([root])
        }
        let second = CertificateManager(keychain: try world.keychain())
        #expect(try second.certificates == [root])
        #expect(throws: CertificateManagerError(.certificateStoreImmutable, "")) { try second.setCertificates([root]) }
    }

    @Test("isolated by access group; other certificates of the group are not the store, and survive its deletion")
    func isolation() throws {
        let world = try ManagerWorld()
        let root = try world.root()
        let other = try world.root("other", subject: "/CN=Other Root")
        let keychain = try world.keychain(["com.example.app"])
        let manager = CertificateManager(keychain: keychain)
        try manager.setCertificates([root])
        // A plain certificate item of the same group (not labelled as the store).
        try keychain.add(
            .certificate,
            attributes: [
                .certificateType: .number(3), .issuer: .data(other.issuer.normalizedEncoded),
                .serialNumber: .data(other.serialNumber), .label: .string("Other Root"),
            ], data: other.derEncoded)

        let stranger = CertificateManager(keychain: try world.keychain(["com.example.other"]))
        #expect(try stranger.isCertificateStoreInUse == false)
        try stranger.setCertificates([other])
        #expect(try stranger.certificates == [other])
        #expect(try manager.certificates == [root])

        #expect(try manager.deleteCertStore())
        #expect(try stranger.certificates == [other])
        let plain = try keychain.find(ItemQuery(.certificate, matching: [.label: .string("Other Root")], limit: .all))
        #expect(plain.count == 1)
    }

    @Test("certificate information matches openssl x509")
    func information() throws {
        let world = try ManagerWorld()
        let root = try world.root()
        let manager = CertificateManager(keychain: try world.keychain())
        try manager.setCertificates([root])
        let info = try #require(try manager.appCertificatesInfo.first)
        #expect(info.subjectSummary == "Root")
        #expect(info.issuerSummary == "Root")
        #expect(info.isCertificateAuthority)
        #expect(info.keyType == "EC")
        #expect(info.keySizeInBits == 256)
        #expect(info.keyUsages == ["keyCertSign", "cRLSign"])
        #expect(info.subjectAlternativeNames.isEmpty)
        #expect(info.notValidBefore == utc("20200101000000Z"))
        #expect(info.notValidAfter == utc("20400101000000Z"))
        let fingerprint1 = try world.openssl(["x509", "-in", "root.pem", "-noout", "-fingerprint", "-sha1"])
        let fingerprint256 = try world.openssl(["x509", "-in", "root.pem", "-noout", "-fingerprint", "-sha256"])
        let serial = try world.openssl(["x509", "-in", "root.pem", "-noout", "-serial"])
        #expect(fingerprint1 == "sha1 Fingerprint=\(info.sha1Fingerprint)")
        #expect(fingerprint256 == "sha256 Fingerprint=\(info.sha256Fingerprint)")
        #expect(serial == "serial=\(info.serialNumber)")
    }
}

@Suite("CertificateInfo serial numbers")
struct SerialNumberTests {
    @Test(
        "the serial is shown as openssl x509 -serial shows it: no sign-padding byte, a minus sign when negative",
        arguments: ["1", "0x80", "0xFF00", "0xE879D73BA83382313C0AA8E1560727EF8EA1F6", "-1", "-129", "0"])
    func serial(_ value: String) throws {
        let directory = try TemporaryDirectory("serial")
        try OpenSSLCLI.require(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "key.pem"], in: directory.url)
        try OpenSSLCLI.require(
            ["req", "-x509", "-new", "-key", "key.pem", "-subj", "/CN=serial", "-set_serial", value, "-days", "1", "-out", "c.pem"],
            in: directory.url)
        let printed = try OpenSSLCLI.require(["x509", "-in", "c.pem", "-noout", "-serial"], in: directory.url).text
        let info = CertificateInfo(try Certificate(pemEncoded: String(decoding: try directory.read("c.pem"), as: UTF8.self)))
        #expect("serial=\(info.serialNumber)" == printed.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
