import Certificates
import Foundation
import HardwareKeys
import SecurityBase
import Testing
import TestVectors

/// Keys on a PKCS#11 token, against SoftHSM2 with keys made by OpenSC's pkcs11-tool: what the token signs, OpenSSL
/// verifies; what it decrypts, OpenSSL encrypted; what it agrees, software agrees too.
@Suite("HardwareKeys: keys on a PKCS#11 token (SoftHSM2), checked by OpenSSL and pkcs11-tool", .serialized, .hardwareExclusive)
struct PKCS11KeyTests {
    let token: SoftHSMToken
    let directory: TemporaryDirectory

    init() throws {
        token = try SoftHSMToken()
        directory = try TemporaryDirectory("pkcs11")
        try token.tool(["--keypairgen", "--key-type", "EC:prime256v1", "--id", "01", "--label", "ec-key", "--usage-sign", "--usage-derive"])
        try token.tool(["--keypairgen", "--key-type", "rsa:2048", "--id", "02", "--label", "rsa-key", "--usage-sign", "--usage-decrypt"])
    }

    var pin: SecretBytes { SecretBytes(Array(token.pin.utf8)) }

    /// The test's token, through a module loaded for the test (SoftHSM reads its tokens when initialised).
    func found() throws -> (PKCS11Modules, PKCS11Token) {
        let modules = try PKCS11Modules(path: SoftHSMToken.module)
        let mine = try #require(try modules.tokens().first { $0.label == token.label })
        return (modules, mine)
    }

    func key(_ label: String, in found: PKCS11Token) throws -> PKCS11Key {
        try #require(try found.keys(pin: pin).first { $0.label == label })
    }

    @Test("the token is found by p11-kit's module loading, named by a PKCS#11 URI; its keys show without the PIN, their public halves pkcs11-tool's")
    func discovery() throws {
        let (_, found) = try found()
        #expect(found.requiresLogin && found.model == "SoftHSM v2")
        #expect(found.tokenID == "pkcs11:model=SoftHSM%20v2;serial=\(found.serial);token=\(token.label)")
        // Through p11-kit's configuration too (Debian's softhsm2 registers its module).
        #expect(try PKCS11Modules.configured().tokens().contains { $0.label == token.label })
        let keys = try found.keys()
        #expect(keys.map(\.label) == ["ec-key", "rsa-key"])
        for (key, id) in zip(keys, ["01", "02"]) {
            let exported = try token.tool(["--read-object", "--type", "pubkey", "--id", id])
            #expect(try key.publicKey.subjectPublicKeyInfo() == exported, "\(key.label)")
        }
    }

    @Test("ECDSA, RSA PKCS#1 v1.5 and PSS signatures made on the token verify with openssl dgst; raw RSA, as OpenSSL's held-key path asks")
    func signatures() throws {
        let (_, found) = try found()
        let message = Data("signed on the token".utf8)
        try message.write(to: directory.url.appendingPathComponent("msg"))
        for (label, algorithm, options) in [
            ("ec-key", SignatureAlgorithm.ecdsaX962(.sha256, hashing: true), [String]()),
            ("rsa-key", .rsaPKCS1v15(.sha256, hashing: true), []),
            ("rsa-key", .rsaPSS(.sha256, hashing: true), ["-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:32"]),
        ] {
            let key = try key(label, in: found)
            let signature = try key.privateKey().signature(for: message, algorithm: algorithm)
            try signature.write(to: directory.url.appendingPathComponent("sig"))
            try key.publicKey.subjectPublicKeyInfo().write(to: directory.url.appendingPathComponent("pub.der"))
            let verified = try OpenSSLCLI.run(
                ["dgst", "-sha256", "-keyform", "DER", "-verify", "pub.der"] + options + ["-signature", "sig", "msg"], in: directory.url)
            #expect(verified.text.contains("Verified OK"), "\(label) \(algorithm): \(verified.stderr)")
        }
        // The fixed-width ECDSA encoding and raw RSA, checked by the software verifier.
        let ec = try key("ec-key", in: found)
        let rfc4754 = try ec.privateKey().signature(for: message, algorithm: .ecdsaRFC4754(.sha384, hashing: true))
        #expect(try ec.publicKey.isValidSignature(rfc4754, for: message, algorithm: .ecdsaRFC4754(.sha384, hashing: true)))
        let rsa = try key("rsa-key", in: found)
        let raw = try rsa.privateKey().signature(for: Data([1, 2, 3]), algorithm: .rsaRaw)
        #expect(try rsa.publicKey.isValidSignature(raw, for: Data([1, 2, 3]), algorithm: .rsaRaw))
    }

    @Test("RSA decryption on the token: what openssl pkeyutl encrypted with PKCS#1 v1.5 and OAEP (SHA-1), comes back")
    func decryption() throws {
        let (_, found) = try found()
        let rsa = try key("rsa-key", in: found)
        try rsa.publicKey.subjectPublicKeyInfo().write(to: directory.url.appendingPathComponent("rsa.der"))
        let secret = "for the token only"
        try Data(secret.utf8).write(to: directory.url.appendingPathComponent("plain"))
        for (options, algorithm) in [([String](), EncryptionAlgorithm.rsaPKCS1), (["-pkeyopt", "rsa_padding_mode:oaep"], .rsaOAEP(.sha1))] {
            try OpenSSLCLI.require(
                ["pkeyutl", "-encrypt", "-pubin", "-keyform", "DER", "-inkey", "rsa.der", "-in", "plain", "-out", "sealed"] + options,
                in: directory.url)
            let sealed = try Data(contentsOf: directory.url.appendingPathComponent("sealed"))
            #expect(String(decoding: try rsa.privateKey().decrypt(sealed, algorithm: algorithm), as: UTF8.self) == secret, "\(algorithm)")
        }
    }

    @Test("ECDH on the token gives what software gives with the other side's key; the private key does not export")
    func keyExchange() throws {
        let (_, found) = try found()
        let ec = try key("ec-key", in: found)
        let peer = try AsymmetricKey.generateEC(curve: .p256)
        #expect(try ec.privateKey().sharedSecret(with: peer.publicKey()) == (try peer.sharedSecret(with: ec.publicKey)))
        #expect(throws: KeyError(.heldElsewhere, "")) { _ = try ec.privateKey().externalRepresentation() }
    }

    @Test("a key made on the token from here: pkcs11-tool lists it, its signature verifies; a wrong PIN is authenticationFailed, none is interactionNotAllowed, also while the right PIN's login is kept")
    func generationAndPIN() throws {
        let (_, found) = try found()
        let made = try found.generateP256(label: "made-here", pin: pin)
        let listing = String(decoding: try token.tool(["--list-objects", "--type", "privkey"]), as: UTF8.self)
        #expect(listing.contains("made-here"))
        let message = Data("made here".utf8)
        let signature = try made.privateKey().signature(for: message, algorithm: .ecdsaX962(.sha256, hashing: true))
        #expect(try made.publicKey.isValidSignature(signature, for: message, algorithm: .ecdsaX962(.sha256, hashing: true)))
        let ec = try key("ec-key", in: found)
        #expect(throws: HardwareKeyError(.authenticationFailed, "")) {
            _ = try ec.with(pin: SecretBytes(Array("000000".utf8))).privateKey().signature(for: message, algorithm: .ecdsaX962(.sha256, hashing: true))
        }
        let error = #expect(throws: HardwareKeyError.self) {
            _ = try ec.with(pin: nil).privateKey().signature(for: message, algorithm: .ecdsaX962(.sha256, hashing: true))
        }
        #expect(error?.code == .interactionNotAllowed && error?.reason.contains(token.label) == true)
        #expect(throws: HardwareKeyError(.interactionNotAllowed, "")) { _ = try found.generateP256(label: "no-pin", pin: nil) }
        // The session kept logged in after the right PIN lets no other PIN through, a prefix of it neither: the token
        // checks each other PIN itself, and the right one works again after it.
        for wrong in ["000000", String(token.pin.dropLast()), token.pin + "0"] {
            #expect(try ec.privateKey().signature(for: message, algorithm: .ecdsaX962(.sha256, hashing: true)).count > 0)
            #expect(throws: HardwareKeyError(.authenticationFailed, ""), "\(wrong)") {
                _ = try ec.with(pin: SecretBytes(Array(wrong.utf8))).privateKey().signature(for: message, algorithm: .ecdsaX962(.sha256, hashing: true))
            }
        }
    }

    @Test("a certificate on the token pairs with its key by CKA_ID; a module that is not there does not load")
    func certificates() throws {
        let (_, found) = try found()
        let ec = try key("ec-key", in: found)
        // A CA issues a certificate for the token's public key; pkcs11-tool writes it under the key's CKA_ID.
        try token.writeCertificate(forKey: "01", label: "ec-key", subject: "/CN=card.example", in: directory.url)
        let (_, reloaded) = try self.found()
        let certificates = try reloaded.certificates()
        #expect(certificates.count == 1 && certificates.first?.id == [0x01])
        #expect(try certificates.first?.certificate.publicKey().externalRepresentation() == ec.publicKey.externalRepresentation())
        #expect(throws: HardwareKeyError(.unavailable, "")) { _ = try PKCS11Modules(path: "/usr/lib/absent-pkcs11.so") }
    }
}
