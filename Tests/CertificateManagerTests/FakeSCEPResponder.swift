import COpenSSL
import CertificateManager
import Certificates
import Foundation
import Synchronization
import TestVectors

/// A SCEP responder on loopback for what scepserver never does (PENDING, CertPoll, failInfo other than
/// badRequest, tampered answers). It is a CA made by `openssl req -x509`; it verifies the client's pkiMessage
/// under the client's own transient certificate, decrypts it with the CA key, issues with `openssl x509 -req`,
/// wraps the certificate with `openssl crl2pkcs7`, and signs its CertRep with the SCEP shim's signer — the
/// client's parser is not used to read the client's messages back.
final class FakeSCEPResponder {
    /// What the CertRep does wrong, when anything.
    enum Tamper: Sendable {
        case none
        /// recipientNonce is not the request's senderNonce.
        case wrongRecipientNonce
        /// Signed by a key that is not the CA's.
        case foreignSigner
    }

    struct Options: Sendable {
        var capabilities = "POSTPKIOperation\nSHA-256\nAES\n"
        /// How many PENDING answers before the final one.
        var pending = 0
        /// The final answer's failInfo (nil: SUCCESS).
        var failInfo: String?
        var tamper = Tamper.none
        /// GetCACert answers this instead of the CA certificate.
        var caAnswer: Data?
        /// PKIOperation answers this HTTP status instead.
        var operationStatus: Int?
        /// An RA (issued by the CA, digitalSignature and keyEncipherment) receives the requests and signs the
        /// CertReps; GetCACert answers a certs-only PKCS#7 of the CA and the RA.
        var registrationAuthority = false
        /// The RA certificate's extensions (an `openssl x509 -extfile`): by default an RA's key usage and no EKU. A
        /// TLS client's extensions make the "RA" a man in the middle holding a certificate the CA once issued him.
        var registrationAuthorityExtensions = "basicConstraints = critical, CA:FALSE\nkeyUsage = digitalSignature, keyEncipherment\n"
        /// A man in the middle: GetCACert answers a certs-only PKCS#7 of the CA and a CA of his own.
        var appendForeignCA = false
        /// The certificate is issued by the foreign CA instead of the CA.
        var issuedByForeignCA = false
    }

    /// One pkiMessage the responder received.
    struct Received: Sendable {
        let method: String
        let messageType: Int
        let transactionID: String
        /// The decrypted content: the CSR, or the poll's IssuerAndSubject.
        let content: Data
    }

    private let holder: TemporaryDirectory
    private let handler: Handler
    private let server: LoopbackHTTPServer

    var url: String { server.url("/scep") }
    var ca: Certificate { handler.ca }
    /// Who decrypts the requests and signs the answers: the CA, or the RA.
    var recipientCertificate: Certificate { handler.recipientCertificate }
    var received: [Received] { handler.state.withLock { $0.received } }

    init(_ options: Options = Options()) throws {
        holder = try TemporaryDirectory("fake-scep")
        let ca = try Self.makeCA("ca", subject: "/O=SecurityServices Tests/CN=Fake SCEP CA", in: holder)
        let foreign = try Self.makeCA("foreign", subject: "/CN=Not The CA", in: holder)
        var recipient = ca
        var caCertificates = ca.0.derEncoded
        if options.registrationAuthority {
            recipient = try Self.makeRA(in: holder, extensions: options.registrationAuthorityExtensions)
            try OpenSSLCLI.require(
                [
                    "crl2pkcs7", "-nocrl", "-certfile", "ca.pem", "-certfile", "ra.pem", "-outform", "DER", "-out",
                    "ca-ra.p7b",
                ], in: holder.url)
            caCertificates = try holder.read("ca-ra.p7b")
        } else if options.appendForeignCA {
            try OpenSSLCLI.require(
                [
                    "crl2pkcs7", "-nocrl", "-certfile", "ca.pem", "-certfile", "foreign.pem", "-outform", "DER", "-out",
                    "ca-foreign.p7b",
                ], in: holder.url)
            caCertificates = try holder.read("ca-foreign.p7b")
        }
        let handler = Handler(
            directory: holder.url, ca: ca, recipient: recipient, caCertificates: options.caAnswer ?? caCertificates,
            foreign: foreign, options: options)
        self.handler = handler
        server = try LoopbackHTTPServer(.answer { handler.respond($0) })
    }

    /// `ra.pem`, a certificate the CA issued with `extensions`, and its key.
    private static func makeRA(in directory: TemporaryDirectory, extensions: String) throws -> (Certificate, AsymmetricKey) {
        try directory.write("ra.ext", extensions)
        try OpenSSLCLI.require(
            [
                "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", "ra.key", "-subj", "/CN=Fake SCEP RA",
                "-out", "ra.csr",
            ], in: directory.url)
        try OpenSSLCLI.require(
            [
                "x509", "-req", "-in", "ra.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-days", "30", "-set_serial",
                "77", "-extfile", "ra.ext", "-out", "ra.pem",
            ], in: directory.url)
        return try load("ra", in: directory)
    }

    private static func load(_ name: String, in directory: TemporaryDirectory) throws -> (Certificate, AsymmetricKey) {
        try OpenSSLCLI.require(
            ["rsa", "-in", "\(name).key", "-traditional", "-outform", "DER", "-out", "\(name).rsa"], in: directory.url)
        return (
            try Certificate(pemEncoded: String(decoding: try directory.read("\(name).pem"), as: UTF8.self)),
            try AsymmetricKey(externalRepresentation: try directory.read("\(name).rsa"), type: .rsa, isPrivate: true)
        )
    }

    private static func makeCA(_ name: String, subject: String, in directory: TemporaryDirectory) throws
        -> (Certificate, AsymmetricKey)
    {
        try OpenSSLCLI.require(
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(name).key", "-out", "\(name).pem",
                "-subj", subject, "-days", "30", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature,keyEncipherment",
            ], in: directory.url)
        return try load(name, in: directory)
    }
}

/// The responder's state and answers, on the server's thread.
private final class Handler: Sendable {
    typealias Options = FakeSCEPResponder.Options
    typealias Received = FakeSCEPResponder.Received
    let directory: URL
    let ca: Certificate
    /// Who decrypts the requests and signs the answers: the CA, or its RA.
    private let recipient: (Certificate, AsymmetricKey)
    var recipientCertificate: Certificate { recipient.0 }
    private let caCertificates: Data
    private let foreign: (Certificate, AsymmetricKey)
    private let options: Options
    let state: Mutex<(pending: Int, received: [Received], csr: Data?)>

    init(
        directory: URL, ca: (Certificate, AsymmetricKey), recipient: (Certificate, AsymmetricKey), caCertificates: Data,
        foreign: (Certificate, AsymmetricKey), options: Options
    ) {
        self.directory = directory
        self.ca = ca.0
        self.recipient = recipient
        self.caCertificates = caCertificates
        self.foreign = foreign
        self.options = options
        state = Mutex((options.pending, [], nil))
    }

    // MARK: HTTP

    func respond(_ request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Response {
        let components = URLComponents(string: request.path)
        let query = Dictionary(
            (components?.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        switch query["operation"] {
        case "GetCACaps":
            return .init(contentType: "text/plain", body: Data(options.capabilities.utf8))
        case "GetCACert":
            let type = options.registrationAuthority ? "application/x-x509-ca-ra-cert" : "application/x-x509-ca-cert"
            return .init(contentType: type, body: caCertificates)
        case "PKIOperation":
            if let status = options.operationStatus { return .init(status: status, body: Data()) }
            let message = request.method == "POST" ? request.body : Data(base64Encoded: query["message"] ?? "")
            guard let message, let answer = try? operation(message, method: request.method) else {
                return .init(status: 400, contentType: "text/plain", body: Data("bad pkiMessage\n".utf8))
            }
            return .init(contentType: "application/x-pki-message", body: answer)
        default:
            return .notFound
        }
    }

    private struct Refused: Error {}

    // MARK: SCEP

    private func operation(_ message: Data, method: String) throws -> Data {
        let bytes = [UInt8](message)
        // The requester's transient certificate, from the message itself.
        guard let carried = PKCS7Messages.certificatesOnly(bytes), carried.count == 1 else { throw Refused() }
        let requester = carried[0]

        // Its signature must verify under that certificate.
        guard case .verified(let opened) = PKCS7Messages.open(bytes, signers: [requester]) else { throw Refused() }

        // The content decrypts with the CA key.
        guard let plain = PKCS7Messages.decrypt(opened.content, key: recipient.1, certificate: recipient.0), plain.count > 0
        else { throw Refused() }
        let inner = plain.withUnsafeBytes { Data($0) }

        let messageType = opened.attributes[.messageType].flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? -1
        let transactionID = opened.attributes[.transactionID].map { String(decoding: $0, as: UTF8.self) } ?? ""
        let senderNonce = opened.attributes[.senderNonce] ?? []
        let pending = state.withLock { state in
            state.received.append(
                Received(method: method, messageType: messageType, transactionID: transactionID, content: inner))
            if messageType == 19 { state.csr = inner }
            if state.pending > 0 {
                state.pending -= 1
                return true
            }
            return false
        }
        var recipientNonce = senderNonce
        if options.tamper == .wrongRecipientNonce { recipientNonce[0] ^= 0xFF }
        if pending { return try certRep(status: "3", transactionID, recipientNonce) }
        if let failInfo = options.failInfo {
            return try certRep(status: "2", failInfo: failInfo, transactionID, recipientNonce)
        }

        // Issue for the CSR of the transaction, wrap it certs-only, encrypt it to the requester.
        guard let csr = state.withLock({ $0.csr }) else { throw Refused() }
        let name = UUID().uuidString
        try csr.write(to: directory.appendingPathComponent("\(name).csr"))
        try OpenSSLCLI.require(
            [
                "x509", "-req", "-inform", "DER", "-in", "\(name).csr",
                "-CA", options.issuedByForeignCA ? "foreign.pem" : "ca.pem",
                "-CAkey", options.issuedByForeignCA ? "foreign.key" : "ca.key", "-days",
                "30", "-set_serial", String(UInt32.random(in: 1...UInt32.max)), "-out", "\(name).pem",
            ], in: directory)
        try OpenSSLCLI.require(
            ["crl2pkcs7", "-nocrl", "-certfile", "\(name).pem", "-outform", "DER", "-out", "\(name).p7b"],
            in: directory)
        let certsOnly = [UInt8](try Data(contentsOf: directory.appendingPathComponent("\(name).p7b")))
        guard let envelope = PKCS7Messages.envelope(certsOnly, for: requester, cipher: EVP_aes_128_cbc()) else { throw Refused() }
        return try certRep(status: "0", transactionID, recipientNonce, content: envelope)
    }

    private func certRep(
        status: String, failInfo: String? = nil, _ transactionID: String, _ recipientNonce: [UInt8],
        content: [UInt8] = []
    ) throws -> Data {
        let (certificate, key) = options.tamper == .foreignSigner ? foreign : recipient
        let nonce = (0..<16).map { _ in UInt8.random(in: 0...255) }
        // RFC 8894 3.3.2: a CertRep carries the request's transactionID, our senderNonce, its nonce as
        // recipientNonce, and the status (with failInfo on FAILURE).
        var attributes: [(SCEPAttribute, [UInt8])] = [
            (.messageType, Array("3".utf8)), (.transactionID, Array(transactionID.utf8)), (.senderNonce, nonce),
            (.pkiStatus, Array(status.utf8)),
        ]
        if let failInfo { attributes.append((.failInfo, Array(failInfo.utf8))) }
        attributes.append((.recipientNonce, recipientNonce))
        guard let signed = PKCS7Messages.signed(content, by: certificate, key: key, digest: EVP_sha256(), attributes: attributes)
        else { throw Refused() }
        return Data(signed)
    }
}
