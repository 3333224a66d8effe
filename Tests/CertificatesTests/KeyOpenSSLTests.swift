import Foundation
import Security
import Testing

/// Cross-checks with the `openssl` command: our keys, signatures and ciphertexts read by OpenSSL's tools, and
/// theirs by us. Each test works in its own temporary directory.
@Suite("Keys: openssl interoperability")
struct KeyOpenSSLTests {
    let directory: URL

    init() throws { directory = try KeyTestSupport.temporaryDirectory() }

    /// Removes the test's directory (called with `defer` at the start of each test).
    func cleanUp() { try? FileManager.default.removeItem(at: directory) }

    func write(_ name: String, _ data: Data) throws { try data.write(to: directory.appendingPathComponent(name)) }
    func read(_ name: String) throws -> Data { try Data(contentsOf: directory.appendingPathComponent(name)) }
    func run(_ arguments: [String]) throws -> KeyTestSupport.CommandResult {
        let result = try KeyTestSupport.openssl(arguments, in: directory)
        #expect(result.status == 0, "openssl \(arguments.joined(separator: " ")): \(result.error)")
        return result
    }

    static func make(_ type: CFString, _ bits: Int) -> SecKey {
        let parameters: [String: Any] = [kSecAttrKeyType as String: type, kSecAttrKeySizeInBits as String: bits]
        return SecKeyCreateRandomKey(parameters as CFDictionary, nil)!  // !: a valid size always generates
    }

    func external(_ key: SecKey) throws -> Data { try #require(SecKeyCopyExternalRepresentation(key, nil) as Data?) }

    @Test("RSA: our PKCS#1 keys read by openssl rsa; our PKCS#1 v1.5 and PSS signatures verified by openssl; theirs by us")
    func rsaInterop() throws {
        defer { cleanUp() }
        let key = Self.make(kSecAttrKeyTypeRSA, 2048)
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        try write("priv.der", try external(key))
        try write("pub.der", try external(publicKey))
        let modulus = try run(["rsa", "-RSAPublicKey_in", "-inform", "DER", "-in", "pub.der", "-noout", "-modulus"])
        let privateModulus = try run(["rsa", "-inform", "DER", "-in", "priv.der", "-noout", "-modulus"])
        #expect(modulus.output == privateModulus.output && !modulus.output.isEmpty)
        _ = try run(["rsa", "-inform", "DER", "-in", "priv.der", "-check", "-noout"])
        _ = try run(["rsa", "-RSAPublicKey_in", "-inform", "DER", "-in", "pub.der", "-pubout", "-out", "pub.pem"])
        _ = try run(["rsa", "-inform", "DER", "-in", "priv.der", "-out", "priv.pem"])

        let message = Data("signed by SecKey".utf8)
        try write("msg", message)
        var error: Unmanaged<CFError>?
        let pkcs1 = try #require(SecKeyCreateSignature(key, .rsaSignatureMessagePKCS1v15SHA256, message as CFData, &error))
        try write("pkcs1.sig", pkcs1 as Data)
        let verified = try run(["dgst", "-sha256", "-verify", "pub.pem", "-signature", "pkcs1.sig", "msg"])
        #expect(String(decoding: verified.output, as: UTF8.self).contains("Verified OK"))
        let pss = try #require(SecKeyCreateSignature(key, .rsaSignatureMessagePSSSHA384, message as CFData, &error))
        try write("pss.sig", pss as Data)
        _ = try run(["dgst", "-sha384", "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:48", "-verify", "pub.pem",
            "-signature", "pss.sig", "msg"])

        // openssl signs, we verify (PKCS#1 v1.5 and PSS with the digest-length salt).
        _ = try run(["dgst", "-sha512", "-sign", "priv.pem", "-out", "theirs.sig", "msg"])
        #expect(SecKeyVerifySignature(publicKey, .rsaSignatureMessagePKCS1v15SHA512, message as CFData, try read("theirs.sig") as CFData, &error))
        _ = try run(["dgst", "-sha256", "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:32", "-sign", "priv.pem",
            "-out", "theirs-pss.sig", "msg"])
        #expect(SecKeyVerifySignature(publicKey, .rsaSignatureMessagePSSSHA256, message as CFData, try read("theirs-pss.sig") as CFData, &error))
    }

    @Test("RSA: our OAEP and PKCS#1 ciphertexts decrypted by openssl pkeyutl, and theirs by us")
    func rsaEncryptionInterop() throws {
        defer { cleanUp() }
        let key = Self.make(kSecAttrKeyTypeRSA, 2048)
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        try write("priv.der", try external(key))
        _ = try run(["rsa", "-inform", "DER", "-in", "priv.der", "-out", "priv.pem"])
        _ = try run(["rsa", "-in", "priv.pem", "-pubout", "-out", "pub.pem"])
        let secret = Data("a session key, say".utf8)
        try write("secret", secret)
        var error: Unmanaged<CFError>?
        let cases: [(SecKeyAlgorithm, [String])] = [
            (.rsaEncryptionPKCS1, ["-pkeyopt", "rsa_padding_mode:pkcs1"]),
            (.rsaEncryptionOAEPSHA1, ["-pkeyopt", "rsa_padding_mode:oaep"]),
            (.rsaEncryptionOAEPSHA256, ["-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:sha256", "-pkeyopt", "rsa_mgf1_md:sha256"]),
            (.rsaEncryptionOAEPSHA512, ["-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:sha512", "-pkeyopt", "rsa_mgf1_md:sha512"]),
        ]
        for (algorithm, options) in cases {
            let ours = try #require(SecKeyCreateEncryptedData(publicKey, algorithm, secret as CFData, &error))
            try write("ours.bin", ours as Data)
            _ = try run(["pkeyutl", "-decrypt", "-inkey", "priv.pem", "-in", "ours.bin", "-out", "ours.out"] + options)
            #expect(try read("ours.out") == secret, "\(algorithm.rawValue)")
            _ = try run(["pkeyutl", "-encrypt", "-pubin", "-inkey", "pub.pem", "-in", "secret", "-out", "theirs.bin"] + options)
            #expect(SecKeyCreateDecryptedData(key, algorithm, try read("theirs.bin") as CFData, &error) as Data? == secret, "\(algorithm.rawValue)")
        }
    }

    @Test("EC: our X9.63 points read by openssl ec; our ECDSA verified by openssl, theirs by us", arguments: [256, 384, 521])
    func ecInterop(_ bits: Int) throws {
        defer { cleanUp() }
        let key = Self.make(kSecAttrKeyTypeECSECPrimeRandom, bits)
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        let curve = ["256": "prime256v1", "384": "secp384r1", "521": "secp521r1"]["\(bits)"]!  // !: the three arguments
        // openssl generates a key, prints its private scalar and public point; our X9.63 import must give the same.
        _ = try run(["ecparam", "-name", curve, "-genkey", "-noout", "-out", "theirs.pem"])
        let text = String(decoding: try run(["ec", "-in", "theirs.pem", "-text", "-noout"]).output, as: UTF8.self)
        func block(_ title: String) -> [UInt8] {
            let lines = text.components(separatedBy: "\n")
            guard let start = lines.firstIndex(where: { $0.hasPrefix(title) }) else { return [] }
            let body = lines[(start + 1)...].prefix { $0.hasPrefix(" ") }.joined()
            return KeyTestSupport.bytes(hex: body.replacingOccurrences(of: ":", with: ""))
        }
        let width = (bits + 7) / 8
        let scalar = KeyTestSupport.fixed(block("priv:"), width: width)
        let point = block("pub:")
        #expect(point.count == 1 + 2 * width)
        let attributes: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeEC, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate]
        var error: Unmanaged<CFError>?
        let theirs = try #require(SecKeyCreateWithData(Data(point + scalar) as CFData, attributes as CFDictionary, &error))
        // Their key signs with openssl; we verify. We sign with their key; openssl verifies.
        let message = Data("ecdsa across implementations".utf8)
        try write("msg", message)
        _ = try run(["ec", "-in", "theirs.pem", "-pubout", "-out", "theirs-pub.pem"])
        _ = try run(["dgst", "-sha256", "-sign", "theirs.pem", "-out", "theirs.sig", "msg"])
        #expect(SecKeyVerifySignature(SecKeyCopyPublicKey(theirs)!, .ecdsaSignatureMessageX962SHA256, message as CFData, try read("theirs.sig") as CFData, &error))
        let ours = try #require(SecKeyCreateSignature(theirs, .ecdsaSignatureMessageX962SHA384, message as CFData, &error))
        try write("ours.sig", ours as Data)
        _ = try run(["dgst", "-sha384", "-verify", "theirs-pub.pem", "-signature", "ours.sig", "msg"])
        // Our own key's public point, wrapped by openssl from the raw X9.63 octets (via a hand-built SPKI).
        let ourPoint = try external(publicKey)
        let oid: [UInt8] = bits == 256 ? [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]
            : bits == 384 ? [0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22] : [0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23]
        let algorithm = KeyTestSupport.derSequence([[0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01], oid])
        let bitString = [0x03] + KeyTestSupport.derLength(ourPoint.count + 1) + [0x00] + [UInt8](ourPoint)
        try write("ours-pub.der", Data(KeyTestSupport.derSequence([algorithm, bitString])))
        // openssl reads the point and prints it back unchanged.
        let printed = String(decoding: try run(["ec", "-pubin", "-inform", "DER", "-in", "ours-pub.der", "-text", "-noout"]).output, as: UTF8.self)
        let printedLines = printed.components(separatedBy: "\n")
        let start = try #require(printedLines.firstIndex { $0.hasPrefix("pub:") })
        let printedPoint = printedLines[(start + 1)...].prefix { $0.hasPrefix(" ") }.joined().replacingOccurrences(of: ":", with: "")
        #expect(KeyTestSupport.bytes(hex: printedPoint) == [UInt8](ourPoint))
        _ = try run(["ec", "-pubin", "-inform", "DER", "-in", "ours-pub.der", "-out", "ours-pub.pem"])
        let ourSignature = try #require(SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA512, message as CFData, &error))
        try write("ours2.sig", ourSignature as Data)
        _ = try run(["dgst", "-sha512", "-verify", "ours-pub.pem", "-signature", "ours2.sig", "msg"])
    }
}
