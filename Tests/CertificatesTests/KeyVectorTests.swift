import Certificates
import Foundation
import Testing

/// Published vectors: NIST CAVS SigVer for RSA PKCS#1 v1.5 and PSS and for ECDSA over P-256/384/521, and the
/// pyca OAEP decryption vectors. Each verdict must equal the vector's Result, failing vectors included.
@Suite("Keys: published vectors", .hostOnly)
struct KeyVectorTests {
    static let digests: [String: KeyDigest] = [
        "SHA1": .sha1, "SHA224": .sha224, "SHA256": .sha256, "SHA384": .sha384, "SHA512": .sha512,
        "SHA-1": .sha1, "SHA-224": .sha224, "SHA-256": .sha256, "SHA-384": .sha384, "SHA-512": .sha512,
    ]

    /// Verifies one RSA SigVer record; a key that does not import counts as a rejection.
    static func rsaVerdict(_ values: [String: String], pss: Bool) throws -> Bool {
        let digest = try #require(digests[values["SHAAlg"] ?? ""])
        let publicKey = KeyTestSupport.rsaPublicKey(
            n: KeyTestSupport.bytes(hex: values["n"]!), e: KeyTestSupport.bytes(hex: values["e"]!))
        guard let key = try? AsymmetricKey(externalRepresentation: publicKey, type: .rsa, isPrivate: false) else { return false }
        let salt = (values["SaltVal"].map { KeyTestSupport.bytes(hex: $0).count }) ?? 0
        let algorithm: SignatureAlgorithm =
            pss ? .rsaPSS(digest, hashing: true, saltLength: values["SaltVal"] == "00" ? 0 : salt) : .rsaPKCS1v15(digest, hashing: true)
        return try key.isValidSignature(
            KeyTestSupport.data(hex: values["S"]!), for: KeyTestSupport.data(hex: values["Msg"]!), algorithm: algorithm)
    }

    @Test("RSA PKCS#1 v1.5 SigVer (FIPS 186-3): 1024-4096 bits, SHA-1 and SHA-2, every Result matches")
    func rsaPKCS1v15SigVer() throws {
        let records = try KeyTestSupport.nistRecords("RSA/FIPS_186-2/SigVer15_186-3.rsp")
        try #require(records.count > 0, "SECURITYSERVICES_VECTORS is not set")
        var passes = 0, fails = 0
        for (section, values) in records {
            let expected = values["Result"]!.hasPrefix("P")
            let verdict = try Self.rsaVerdict(values, pss: false)
            #expect(verdict == expected, "\(section) \(values["SHAAlg"] ?? "") \(values["Result"] ?? "")")
            if expected { passes += 1 } else { fails += 1 }
        }
        #expect(passes == 75 && fails == 375)
    }

    @Test("RSA PSS SigVer (FIPS 186-3): every Result matches")
    func rsaPSSSigVer() throws {
        let records = try KeyTestSupport.nistRecords("RSA/FIPS_186-2/SigVerPSS_186-3.rsp")
        try #require(records.count > 0, "SECURITYSERVICES_VECTORS is not set")
        var checked = 0
        for (section, values) in records {
            let expected = values["Result"]!.hasPrefix("P")
            #expect(try Self.rsaVerdict(values, pss: true) == expected, "\(section) \(values["SHAAlg"] ?? "") \(values["Result"] ?? "")")
            checked += 1
        }
        #expect(checked == 450)
    }

    @Test("ECDSA SigVer (FIPS 186-3) on P-256, P-384, P-521 with SHA-2: r||s and DER both agree with Result")
    func ecdsaSigVer() throws {
        let records = try KeyTestSupport.nistRecords("ECDSA/FIPS_186-3/SigVer.rsp")
        try #require(records.count > 0, "SECURITYSERVICES_VECTORS is not set")
        var checked = 0
        for (section, values) in records {
            let parts = section.split(separator: ",").map(String.init)
            guard parts.count == 2, let curve = ["P-256": EllipticCurve.p256, "P-384": .p384, "P-521": .p521][parts[0]],
                let digest = Self.digests[parts[1]], digest != .sha1
            else { continue }
            let width = curve.fieldBytes
            let point = [0x04] + KeyTestSupport.fixed(KeyTestSupport.bytes(hex: values["Qx"]!), width: width)
                + KeyTestSupport.fixed(KeyTestSupport.bytes(hex: values["Qy"]!), width: width)
            let expected = values["Result"]!.hasPrefix("P")
            let message = KeyTestSupport.data(hex: values["Msg"]!)
            let raw = Data(
                KeyTestSupport.fixed(KeyTestSupport.bytes(hex: values["R"]!), width: width)
                    + KeyTestSupport.fixed(KeyTestSupport.bytes(hex: values["S"]!), width: width))
            let der = Data(
                KeyTestSupport.derSequence([
                    KeyTestSupport.derInteger(KeyTestSupport.bytes(hex: values["R"]!)),
                    KeyTestSupport.derInteger(KeyTestSupport.bytes(hex: values["S"]!)),
                ]))
            var verdictRaw = false, verdictDER = false
            if let key = try? AsymmetricKey(externalRepresentation: Data(point), type: .ellipticCurve, isPrivate: false) {
                verdictRaw = try key.isValidSignature(raw, for: message, algorithm: .ecdsaRFC4754(digest, hashing: true))
                verdictDER = try key.isValidSignature(der, for: message, algorithm: .ecdsaX962(digest, hashing: true))
            }
            #expect(verdictRaw == expected, "\(section) \(values["Result"]!)")
            #expect(verdictDER == expected, "\(section) \(values["Result"]!)")
            checked += 1
        }
        #expect(checked == 3 * 4 * 15)
    }

    @Test("OAEP decryption (pyca vectors, same digest for OAEP and MGF1)", arguments: ["sha224", "sha256", "sha384", "sha512"])
    func oaepDecryption(_ name: String) throws {
        let examples = try KeyTestSupport.oaepExamples("RSA/oaep-custom/oaep-\(name)-\(name).txt")
        try #require(examples.count > 0, "SECURITYSERVICES_VECTORS is not set")
        let digest = try #require(Self.digests[name.uppercased()])
        for example in examples {
            let key = try AsymmetricKey(externalRepresentation: example.key, type: .rsa, isPrivate: true)
            guard example.ciphertext.count == key.blockSize else { continue }
            #expect(try key.decrypt(example.ciphertext, algorithm: .rsaOAEP(digest)) == example.message)
        }
    }

    @Test("PKCS#1 v1.5 signature generation vectors (FIPS 186-3 SigGen15): every published signature verifies")
    func rsaSigGen() throws {
        guard let root = KeyTestSupport.vectorsRoot else { return }
        // SigGen15 lists n, e, d per modulus and SHAAlg/Msg/S per record; PKCS#1 v1.5 is deterministic.
        let text = try String(contentsOf: root.appendingPathComponent("RSA/FIPS_186-2/SigGen15_186-3.rsp"), encoding: .utf8)
        var n = "", e = "", alg = "", msg = ""
        var checked = 0
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            switch key {
            case "n": n = value
            case "e": e = value
            case "SHAAlg": alg = value
            case "Msg": msg = value
            case "S":
                // Only n, e, d are published (no primes), so a PKCS#1 private key cannot be built: the check is
                // that our verifier accepts every published signature.
                let publicKey = try AsymmetricKey(
                    externalRepresentation: KeyTestSupport.rsaPublicKey(n: KeyTestSupport.bytes(hex: n), e: KeyTestSupport.bytes(hex: e)),
                    type: .rsa, isPrivate: false)
                let digest = try #require(Self.digests[alg])
                #expect(try publicKey.isValidSignature(KeyTestSupport.data(hex: value), for: KeyTestSupport.data(hex: msg), algorithm: .rsaPKCS1v15(digest, hashing: true)))
                checked += 1
            default: break
            }
        }
        #expect(checked > 0)
    }
}
