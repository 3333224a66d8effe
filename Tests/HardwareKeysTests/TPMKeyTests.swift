import Certificates
import Foundation
import HardwareKeys
import Testing
import TestVectors

/// Keys held in a TPM, against a software TPM (swtpm) on loopback: what the TPM signs, OpenSSL and tpm2-tools
/// check; what it agrees, software agrees too.
@Suite("HardwareKeys: P-256 and RSA keys in a TPM (swtpm), checked by OpenSSL and tpm2-tools", .serialized)
struct TPMKeyTests {
    let swtpm: SoftwareTPM
    let tpm: TrustedPlatformModule

    init() throws {
        swtpm = try SoftwareTPM()
        tpm = TrustedPlatformModule(configuration: swtpm.configuration)
    }

    func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tpmkey-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// Writes `blob`'s areas as `key.pub` and `key.priv` in `directory` and loads them with tpm2-tools under the
    /// primary tpm2_createprimary makes the same way (`key.ctx`). swtpm has no resource manager: each tool's transient
    /// objects are flushed before the next.
    func loadWithTools(_ blob: Data, in directory: URL) throws {
        let bytes = [UInt8](blob)  // 1 | size | public area | size | private area
        let publicSize = Int(bytes[1]) << 8 | Int(bytes[2])
        try Data(bytes[3..<(3 + publicSize)]).write(to: directory.appendingPathComponent("key.pub"))
        try Data(bytes[(5 + publicSize)...]).write(to: directory.appendingPathComponent("key.priv"))
        try swtpm.tools(
            "tpm2_createprimary",
            ["-C", "o", "-g", "sha256", "-G", "ecc256:aes128cfb", "-a", "restricted|decrypt|fixedtpm|fixedparent|sensitivedataorigin|userwithauth|noda",
             "-c", "primary.ctx"], in: directory)
        try swtpm.tools("tpm2_flushcontext", ["-t"], in: directory)
        try swtpm.tools("tpm2_load", ["-C", "primary.ctx", "-u", "key.pub", "-r", "key.priv", "-c", "key.ctx"], in: directory)
        try swtpm.tools("tpm2_flushcontext", ["-t"], in: directory)
    }

    @Test("a key made in the TPM signs: OpenSSL verifies the message signature with its public key; digests of other sizes and r||s sign as software signs them")
    func signing() throws {
        let key = try TPMKey.generate(in: tpm)
        let privateKey = try key.privateKey()
        #expect(privateKey.isHeldElsewhere && privateKey.curve == .p256)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let message = Data("signed in the TPM".utf8)
        let signature = try privateKey.signature(for: message, algorithm: .ecdsaX962(.sha256, hashing: true))
        try message.write(to: directory.appendingPathComponent("msg"))
        try signature.write(to: directory.appendingPathComponent("sig"))
        try key.publicKey.subjectPublicKeyInfo().write(to: directory.appendingPathComponent("pub.der"))
        let verified = try OpenSSLCLI.require(
            ["dgst", "-sha256", "-keyform", "DER", "-verify", "pub.der", "-signature", "sig", "msg"], in: directory)
        #expect(verified.text.contains("Verified OK"))
        // SHA-384 and SHA-1 digests (longer and shorter than the curve), and the fixed-width encoding.
        for (algorithm, input) in [
            (SignatureAlgorithm.ecdsaX962(.sha384, hashing: true), message),
            (.ecdsaX962(.sha1, hashing: true), message),
            (.ecdsaRFC4754(.sha256, hashing: true), message),
            (.ecdsaX962(nil, hashing: false), Data(repeating: 0xab, count: 28)),
        ] {
            let signed = try privateKey.signature(for: input, algorithm: algorithm)
            #expect(try key.publicKey.isValidSignature(signed, for: input, algorithm: algorithm), "\(algorithm)")
        }
        #expect(throws: KeyError.self) { try privateKey.signature(for: message, algorithm: .rsaPKCS1v15(.sha256, hashing: true)) }
    }

    @Test("ECDH in the TPM gives what software gives with the other side's private key; the private key does not export")
    func keyExchange() throws {
        let key = try TPMKey.generate(in: tpm)
        let peer = try AsymmetricKey.generateEC(curve: .p256)
        let ours = try key.privateKey().sharedSecret(with: peer.publicKey())
        let theirs = try peer.sharedSecret(with: key.publicKey)
        #expect(ours == theirs && ours.count == 32)
        #expect(throws: KeyError(.heldElsewhere, "")) { _ = try key.privateKey().externalRepresentation() }
        let p384 = try AsymmetricKey.generateEC(curve: .p384)
        #expect(throws: KeyError.self) { _ = try key.privateKey().sharedSecret(with: p384.publicKey()) }
    }

    @Test("the blob is what tpm2-tools write: tpm2_load takes it under the same primary and tpm2_sign signs with it; the blob read back signs again")
    func blobs() throws {
        let key = try TPMKey.generate(in: tpm)
        let reread = try TPMKey(blob: key.blob, tpm: tpm)
        let message = Data("blob".utf8)
        #expect(try key.publicKey.isValidSignature(
            try reread.privateKey().signature(for: message, algorithm: .ecdsaX962(.sha256, hashing: true)), for: message,
            algorithm: .ecdsaX962(.sha256, hashing: true)))
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try message.write(to: directory.appendingPathComponent("msg"))
        try loadWithTools(key.blob, in: directory)
        try swtpm.tools("tpm2_sign", ["-c", "key.ctx", "-g", "sha256", "-s", "ecdsa", "-f", "plain", "-o", "sig.der", "msg"], in: directory)
        try swtpm.tools("tpm2_flushcontext", ["-t"], in: directory)
        let theirs = try Data(contentsOf: directory.appendingPathComponent("sig.der"))
        #expect(try key.publicKey.isValidSignature(theirs, for: message, algorithm: .ecdsaX962(.sha256, hashing: true)))
        // Bytes that are not a blob.
        for bad in [Data(), Data([1, 0, 1, 7]), key.blob.dropLast(), Data([2]) + key.blob.dropFirst()] {
            #expect(throws: HardwareKeyError(.invalidKeyData, "")) { _ = try TPMKey(blob: bad, tpm: tpm) }
        }
    }

    @Test("an RSA key made in the TPM signs PKCS#1 v1.5 and PSS (OpenSSL verifies) and decrypts what OpenSSL encrypted (PKCS#1 v1.5, OAEP); its blob reads back; tpm2-tools decrypt with it")
    func rsa() throws {
        let key = try TPMKey.generateRSA(bits: 2048, in: tpm)
        let privateKey = try key.privateKey()
        #expect(privateKey.type == .rsa && privateKey.sizeInBits == 2048 && privateKey.isHeldElsewhere)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let message = Data("signed by the TPM's RSA key".utf8)
        try message.write(to: directory.appendingPathComponent("msg"))
        try key.publicKey.subjectPublicKeyInfo().write(to: directory.appendingPathComponent("pub.der"))
        for (algorithm, options) in [
            (SignatureAlgorithm.rsaPKCS1v15(.sha256, hashing: true), [String]()),
            (.rsaPSS(.sha256, hashing: true), ["-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:32"]),
        ] {
            try privateKey.signature(for: message, algorithm: algorithm).write(to: directory.appendingPathComponent("sig"))
            let verified = try OpenSSLCLI.require(
                ["dgst", "-sha256", "-keyform", "DER", "-verify", "pub.der"] + options + ["-signature", "sig", "msg"], in: directory)
            #expect(verified.text.contains("Verified OK"), "\(algorithm)")
        }
        // What OpenSSL encrypts to the public key, the TPM's key decrypts.
        let secret = Data("a content key, say".utf8)
        try secret.write(to: directory.appendingPathComponent("secret"))
        for (algorithm, options) in [
            (EncryptionAlgorithm.rsaPKCS1, [String]()),
            (.rsaOAEP(.sha256), ["-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:sha256", "-pkeyopt", "rsa_mgf1_md:sha256"]),
        ] {
            try OpenSSLCLI.require(
                ["pkeyutl", "-encrypt", "-pubin", "-keyform", "DER", "-inkey", "pub.der", "-in", "secret", "-out", "enc"] + options, in: directory)
            let encrypted = try Data(contentsOf: directory.appendingPathComponent("enc"))
            #expect(try privateKey.decrypt(encrypted, algorithm: algorithm) == secret, "\(algorithm)")
        }
        #expect(throws: KeyError(.heldElsewhere, "")) { _ = try privateKey.externalRepresentation() }
        #expect(throws: KeyError.self) { _ = try privateKey.signature(for: message, algorithm: .ecdsaX962(.sha256, hashing: true)) }
        #expect(throws: KeyError(.unsupportedKeySize, "")) { _ = try TPMKey.generateRSA(bits: 1024, in: tpm) }

        // The blob reads back as the same key, and tpm2-tools load it under the same primary and decrypt with it.
        let reread = try TPMKey(blob: key.blob, tpm: tpm)
        #expect(try reread.publicKey.publicKeySHA1() == key.publicKey.publicKeySHA1())
        try OpenSSLCLI.require(["pkeyutl", "-encrypt", "-pubin", "-keyform", "DER", "-inkey", "pub.der", "-in", "secret", "-out", "enc"], in: directory)
        try loadWithTools(key.blob, in: directory)
        try swtpm.tools("tpm2_rsadecrypt", ["-c", "key.ctx", "-s", "rsaes", "-o", "dec", "enc"], in: directory)
        try swtpm.tools("tpm2_flushcontext", ["-t"], in: directory)
        #expect(try Data(contentsOf: directory.appendingPathComponent("dec")) == secret)
    }

    @Test("only the TPM that made a key uses it: another TPM fails the operation; no TPM is unavailable, and says so")
    func otherAndNoTPM() throws {
        let key = try TPMKey.generate(in: tpm)
        let other = try SoftwareTPM()
        let elsewhere = try TPMKey(blob: key.blob, tpm: TrustedPlatformModule(configuration: other.configuration))
        #expect(throws: HardwareKeyError(.deviceFailure, "")) {
            _ = try elsewhere.privateKey().signature(for: Data("x".utf8), algorithm: .ecdsaX962(.sha256, hashing: true))
        }
        let absent = TrustedPlatformModule(configuration: "device:/dev/tpmrm-absent")
        let error = #expect(throws: HardwareKeyError.self) { _ = try TPMKey.generate(in: absent) }
        #expect(error?.code == .unavailable && error?.reason.contains("no TPM here") == true)
        let silent = TrustedPlatformModule(configuration: "swtpm:host=127.0.0.1,port=1")
        #expect(throws: HardwareKeyError(.unavailable, "")) { _ = try TPMKey.generate(in: silent) }
    }
}
