import COpenSSL
import CertificateManager
import Certificates
import Foundation
import TestVectors
import Testing

/// SCEP's PKCS#7 work with a private key held elsewhere (the keychain service's kind): OpenSSL signs and decrypts
/// with it through the holder, as it does for an enrolled identity kept by the service.
@Suite("SCEP messages with a key held elsewhere")
struct HeldKeySCEPTests {
    @Test("a transient certificate and a signed message made with the held key verify; a message enveloped for it decrypts (PKCS#1 v1.5 inside OpenSSL)")
    func signAndDecrypt() throws {
        let real = try AsymmetricKey.generateRSA(bits: 2048)
        let holder = CountingKeyHolder(real)
        let held = try AsymmetricKey(publicKey: try real.publicKey(), heldBy: holder)
        let certificate = try #require(PKCS7Messages.selfSigned(key: held, commonName: "held", digest: EVP_sha256(), days: 1))
        #expect(PKCS7Messages.isIssued(certificate, by: certificate), "the self-signed certificate's signature verifies")
        #expect(holder.calls == 1)

        let content = Array("a pkiMessage's content".utf8)
        let signed = try #require(
            PKCS7Messages.signed(content, by: certificate, key: held, digest: EVP_sha256(), attributes: [(.transactionID, Array("42".utf8))]))
        guard case .verified(let opened) = PKCS7Messages.open(signed, signers: [certificate]) else {
            Issue.record("the message signed with the held key does not verify")
            return
        }
        #expect(opened.content == content)
        #expect(holder.calls == 2)

        let secret = Array("the issued certificate".utf8)
        let enveloped = try #require(PKCS7Messages.envelope(secret, for: certificate, cipher: EVP_aes_256_cbc()))
        let plain = try #require(PKCS7Messages.decrypt(enveloped, key: held, certificate: certificate))
        #expect(plain.withUnsafeBytes { Array($0) } == secret)
        #expect(holder.calls == 3, "the decryption's private operation reached the holder")
    }
}
