import CryptoContract
import SoftwareBackend
import Testing
import TestVectors

/// Every algorithm and mode of the contract against published vectors, on the software backend.
@Suite("Software backend: published vectors")
struct SoftwareVectorTests {
    let backend = SoftwareBackend()

    @Test("AES (NIST CAVP AESVS, RFC 3686)", arguments: [CipherMode.ecb, .cbc, .cfb, .cfb8, .ofb, .ctr])
    func aes(mode: CipherMode) throws {
        let cases = try CipherVectors.aes(mode)
        #expect(cases.count >= (mode == .ctr ? 9 : 100))
        #expect(VectorRunner.run(cases, on: backend) == [])
    }

    @Test("3DES (NIST CAVP TDESVS)", arguments: [CipherMode.ecb, .cbc, .cfb, .cfb8, .ofb])
    func tripleDES(mode: CipherMode) throws {
        let cases = try CipherVectors.tripleDES(mode)
        #expect(cases.count > 100)
        #expect(VectorRunner.run(cases, on: backend) == [])
    }

    @Test("DES (NIST CAVP TDESVS known answers, keying option 3)", arguments: [CipherMode.ecb, .cbc, .cfb, .cfb8, .ofb])
    func des(mode: CipherMode) throws {
        let cases = try CipherVectors.des(mode)
        #expect(cases.count > 100)
        #expect(VectorRunner.run(cases, on: backend) == [])
    }

    @Test("Blowfish (Schneier)", arguments: [CipherMode.ecb, .cbc, .cfb, .ofb])
    func blowfish(mode: CipherMode) throws {
        let cases = try CipherVectors.blowfish(mode)
        #expect(!cases.isEmpty)
        #expect(VectorRunner.run(cases, on: backend) == [])
    }

    @Test("CAST5 (RFC 2144, pyca)", arguments: [CipherMode.ecb, .cbc, .cfb, .ofb, .ctr])
    func cast5(mode: CipherMode) throws {
        let cases = try CipherVectors.cast5(mode)
        #expect(!cases.isEmpty)
        #expect(VectorRunner.run(cases, on: backend) == [])
    }

    @Test("RC2 (RFC 2268, pyca)", arguments: [CipherMode.ecb, .cbc])
    func rc2(mode: CipherMode) throws {
        let cases = try CipherVectors.rc2(mode)
        #expect(!cases.isEmpty)
        #expect(VectorRunner.run(cases, on: backend) == [])
    }

    @Test("RC4 (RFC 6229)")
    func rc4() throws {
        let cases = try CipherVectors.rc4()
        #expect(cases.count > 100)
        #expect(VectorRunner.run(cases, on: backend) == [])
    }

    @Test("Digests (NIST SHAVS, RFC 1319/1320/1321)", arguments: DigestAlgorithm.allCases)
    func digest(algorithm: DigestAlgorithm) throws {
        let cases = try DigestVectors.cases(algorithm)
        #expect(cases.count >= 7)
        #expect(VectorRunner.run(cases, on: backend) == [])
    }

    @Test("HMAC (RFC 2202, RFC 4231)", arguments: DigestAlgorithm.allCases.filter(\.supportsHMAC))
    func hmac(algorithm: DigestAlgorithm) throws {
        let cases = try HMACVectors.cases(algorithm)
        #expect(cases.count >= 6)
        #expect(VectorRunner.run(cases, on: backend) == [])
    }
}
