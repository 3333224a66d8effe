import Foundation
import Security
import TestVectors
import Testing

/// The documentation-shaped snippets (DocumentationSnippets.swift), compiled unchanged, run here and
/// checked against the openssl command line where it can judge.
@Suite("Apple-platform code: documentation snippets for each header, unchanged", .isolatedKeychain(["com.example.snippets"]))
struct DocumentationSnippetTests {
    /// A CA and a server certificate for `snippets.example`, made by openssl.
    static func chain(_ directory: TemporaryDirectory) throws -> (root: Data, leaf: Data) {
        func openssl(_ arguments: [String]) throws { _ = try OpenSSLCLI.require(arguments, in: directory.url) }
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-subj", "/CN=Snippet CA", "-days", "30", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
        ])
        try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=snippets.example"])
        try directory.write("ext.cnf", "subjectAltName=DNS:snippets.example\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n")
        try openssl(["x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "leaf.pem", "-days", "20", "-extfile", "ext.cnf"])
        try openssl(["x509", "-in", "ca.pem", "-outform", "DER", "-out", "ca.der"])
        try openssl(["x509", "-in", "leaf.pem", "-outform", "DER", "-out", "leaf.der"])
        return (try directory.read("ca.der"), try directory.read("leaf.der"))
    }

    @Test("SecKey articles: a tagged key generated, found again, encrypting and decrypting, signing and verifying, stored as data")
    func keys() throws {
        let (privateKey, publicKey) = try DocumentationSnippets.generateKeyPair(tag: "com.example.keys.mykey")
        let found = try DocumentationSnippets.existingKey(tag: "com.example.keys.mykey")
        #expect(SecKeyCopyExternalRepresentation(found, nil) as Data? == SecKeyCopyExternalRepresentation(privateKey, nil) as Data?)
        #expect(throws: SnippetError.status(errSecItemNotFound)) { try DocumentationSnippets.existingKey(tag: "com.example.keys.other") }
        let message = Data("attack at dawn".utf8)
        let cipherText = try DocumentationSnippets.encrypt(message, with: publicKey)
        #expect(cipherText.count == 256 && cipherText != message)
        #expect(try DocumentationSnippets.decrypt(cipherText, with: found) == message)
        #expect(throws: SnippetError.tooLong) { try DocumentationSnippets.encrypt(Data(count: 200), with: publicKey) }
        let signed = try DocumentationSnippets.signAndVerify(message)
        #expect(signed.verified && !signed.tamperedVerified)
        let again = try DocumentationSnippets.roundTrip(privateKey)
        #expect(try DocumentationSnippets.decrypt(cipherText, with: again) == message)
    }

    @Test("SecCertificate, SecPolicy and SecTrust articles: stored and found by label, examined, evaluated against openssl's chain")
    func certificatesAndTrust() async throws {
        let directory = try TemporaryDirectory("snippets")
        let (rootDER, leafDER) = try Self.chain(directory)
        let leaf = try DocumentationSnippets.storeAndFindCertificate(leafDER, label: "My Certificate")
        #expect(throws: SnippetError.status(errSecDecode)) { try DocumentationSnippets.storeAndFindCertificate(Data("junk".utf8), label: "x") }
        let examined = DocumentationSnippets.examine(leaf)
        #expect(examined.summary == "snippets.example" && examined.der == leafDER && examined.keyBlockSize != nil)
        let root = try #require(SecCertificateCreateWithData(nil, rootDER as CFData))
        // What openssl says of the same chain, and what the trust says.
        let verified = try OpenSSLCLI.run(["verify", "-CAfile", "ca.pem", "-verify_hostname", "snippets.example", "leaf.pem"], in: directory.url)
        #expect(verified.status == 0)
        let good = DocumentationSnippets.evaluate([leaf], anchors: [root], host: "snippets.example")
        #expect(good.trusted && good.code == nil && good.result == .unspecified)
        let wrongHost = DocumentationSnippets.evaluate([leaf], anchors: [root], host: "other.example")
        #expect(!wrongHost.trusted && wrongHost.code == Int(errSecHostNameMismatch) && wrongHost.result == .recoverableTrustFailure)
        // No anchor the chain reaches (the list is the only one, and empty): not trusted.
        let noAnchor = DocumentationSnippets.evaluate([leaf], anchors: [], host: "snippets.example")
        #expect(!noAnchor.trusted && noAnchor.result == .recoverableTrustFailure)
        let asynchronously = await withCheckedContinuation { continuation in
            DocumentationSnippets.evaluateAsync([leaf], anchors: [root], host: "snippets.example") { continuation.resume(returning: $0) }
        }
        #expect(asynchronously)
        #expect(DocumentationSnippets.policies(host: "snippets.example").count == 2)
    }

    @Test("SecRandom, SecImportExport and SecSharedCredential: random bytes, a PEM file read and written, credentials unavailable")
    func randomImportShared() async throws {
        let first = try #require(DocumentationSnippets.randomBytes(32)), second = try #require(DocumentationSnippets.randomBytes(32))
        #expect(first.count == 32 && first != second)
        let directory = try TemporaryDirectory("snippets-pem")
        _ = try Self.chain(directory)
        let pem = try directory.read("leaf.pem") + (try directory.read("leaf.key"))
        let imported = try DocumentationSnippets.importPEM(pem)
        #expect(imported.format == .formatPEMSequence && imported.type == .itemTypeAggregate && imported.items.count == 2)
        let certificate = try #require(imported.items.first as? SecCertificate)
        let written = try DocumentationSnippets.exportPEM(certificate)
        try directory.write("written.pem", written)
        let ours = try OpenSSLCLI.require(["x509", "-in", "written.pem", "-noout", "-fingerprint", "-sha256"], in: directory.url).text
        let theirs = try OpenSSLCLI.require(["x509", "-in", "leaf.pem", "-noout", "-fingerprint", "-sha256"], in: directory.url).text
        #expect(ours == theirs)
        #expect(throws: SnippetError.status(errSecUnknownFormat)) { try DocumentationSnippets.importPEM(Data("no pem here".utf8)) }
        let shared = await withCheckedContinuation { continuation in
            DocumentationSnippets.requestSharedCredentials { continuation.resume(returning: $0) }
        }
        #expect(shared == errSecUnimplemented)
    }
}
