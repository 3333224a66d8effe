internal import COpenSSL
import Certificates
import Foundation
import HardwareKeys
import NetworkFetch
import Keychain
import KeychainItems

// Enrollment (SCEP, RFC 8894): a key pair made here, a certificate from the CA, both stored as the client identity.
extension CertificateManager {
    /// The label of a key generated for an enrollment that has not finished. It exists only while `enroll` runs:
    /// a granted enrollment stores the key as the client identity, a failed one deletes it.
    public static let enrollmentKeyLabel = "SecurityServices.CertificateManager.enrollment-key"

    /// Obtains a client identity from a SCEP server (RFC 8894) and stores it.
    ///
    /// Asks the server for its capabilities (GetCACaps) and CA certificate (GetCACert; pinned by
    /// ``EnrollmentConfiguration/caFingerprint`` when set), then the application for credentials; generates an RSA
    /// key pair in the keychain (under the manager's access group), in the TPM (``EnrollmentConfiguration/keyLocation``:
    /// the keychain then keeps the TPM's blob), or on a PKCS#11 token (which then holds the key and the issued
    /// certificate; the keychain keeps the certificate and which token holds it); sends a PKCS#10 request with the common name and
    /// challenge password (PKCSReq: signed by a transient self-signed certificate of the new key, encrypted for the
    /// CA or its RA); polls (CertPoll) while the CA answers PENDING; checks the CertRep's signature, transaction and
    /// nonce; decrypts the certificate and stores it with the key as the client identity
    /// (``CertificateManagerEvent/provisioned(_:)`` is reported).
    ///
    /// - Parameters:
    ///   - configuration: the server, the key size, the CA pin, timeouts and polling.
    ///   - credentials: asked once for the common name and challenge password.
    /// - Returns: the identity and its chain.
    /// - Throws: ``CertificateManagerError``: `.invalidEnrollmentRequest`, `.clientIdentityExists` (delete the
    ///   identity first), `.enrollmentCredentialsUnavailable`, `.enrollmentKeyUnavailable` (no TPM, or one that
    ///   refuses the key size; a token that refuses the PIN, the key or the certificate), `.enrollmentServerUnreachable`,
    ///   `.enrollmentServerError`, `.enrollmentUntrustedCA`, `.enrollmentBadRequest` (a wrong challenge password),
    ///   `.enrollmentRejected`, `.enrollmentPending`, `.enrollmentMalformedResponse`, `.enrollmentBadSignature`,
    ///   `.keychain`; `CancellationError` when the task is cancelled. On any failure the generated key is deleted
    ///   and nothing is stored. No error carries the password or key material.
    public func enroll(
        configuration: EnrollmentConfiguration, credentials: any EnrollmentCredentialProvider
    ) async throws -> EnrollmentResult {
        try Self.check(configuration)
        guard try !storedIdentityExists() else {
            throw CertificateManagerError(.clientIdentityExists, "a client identity is provisioned; delete it first")
        }
        let transport = SCEPTransport(url: configuration.url, timeout: configuration.timeout, network: configuration.network)
        let capabilities = try await Self.capabilities(transport)
        let authority = try SCEPCertificateAuthority(
            try await Self.send(transport, "GetCACert") {
                try await transport.get("GetCACert", message: configuration.caIdentifier)
            }, fingerprint: configuration.caFingerprint, raFingerprint: configuration.raFingerprint)

        let given: EnrollmentCredentials
        do {
            given = try await credentials.credentials(
                for: EnrollmentContext(
                    url: configuration.url, certificateAuthority: CertificateInfo(authority.certificate)))
        } catch {
            // The provider's error is the application's: only its type is named (it might quote what was typed).
            throw CertificateManagerError(
                .enrollmentCredentialsUnavailable, "the credential provider gave no credentials (\(type(of: error)))")
        }
        guard !given.commonName.isEmpty else {
            throw CertificateManagerError(.invalidEnrollmentRequest, "the common name is empty")
        }
        try Task.checkCancellation()
        // A process that died during an enrollment left its key: no enrollment is running now that needs it (an
        // identity, once stored, holds its own copy), so it goes.
        removeEnrollmentKeys(matching: [:])

        let key = try Self.makeKey(configuration)
        try storeEnrollmentKey(key)
        do {
            let result = try await request(
                key: key, credentials: given, authority: authority, capabilities: capabilities,
                transport: transport, configuration: configuration)
            if let tokenKey = key.heldBy as? PKCS11Key {
                do { try tokenKey.token.store(result.identity.certificate, for: tokenKey, label: Self.clientIdentityLabel) } catch let error as HardwareKeyError {
                    throw CertificateManagerError(.enrollmentKeyUnavailable, "the issued certificate cannot be written onto the token: \(error.reason)")
                }
            }
            try setClientIdentity(result.identity, certificateChain: Array(result.certificateChain.dropFirst()))
            removeEnrollmentKey(key, failed: false)
            return result
        } catch {
            removeEnrollmentKey(key, failed: true)
            throw error
        }
    }

    /// ``enroll(configuration:credentials:)`` with the credentials from a closure (one asking the user, say).
    public func enroll(
        configuration: EnrollmentConfiguration,
        credentials: @escaping @Sendable (EnrollmentContext) async throws -> EnrollmentCredentials
    ) async throws -> EnrollmentResult {
        try await enroll(configuration: configuration, credentials: ClosureCredentialProvider(credentials))
    }

    // MARK: The transaction

    /// PKCSReq, then CertPoll while PENDING; the issued certificate and its chain.
    private func request(
        key: AsymmetricKey, credentials: EnrollmentCredentials, authority: SCEPCertificateAuthority,
        capabilities: Set<String>, transport: SCEPTransport, configuration: EnrollmentConfiguration
    ) async throws -> EnrollmentResult {
        let algorithms = SCEPAlgorithms(capabilities)
        let requester = try SCEPRequester(key: key, commonName: credentials.commonName, algorithms: algorithms)
        let post = capabilities.contains("POSTPKIOPERATION") || capabilities.contains("SCEPSTANDARD")

        // The request carries the challenge password: its bytes are wiped once encrypted. (The password's String
        // cannot be wiped: Swift strings are immutable values.)
        var request: [UInt8]
        do {
            request = [UInt8](
                try CertificateSigningRequest(
                    subject: [.init("CN", credentials.commonName)], challengePassword: credentials.challengePassword,
                    privateKey: key, digest: .sha256
                ).derEncoded)
        } catch let error as CertificateError {
            throw CertificateManagerError(.invalidEnrollmentRequest, "the certificate request: \(error.reason)")
        }
        defer { request.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) } }

        var nonce = try Self.nonce()
        var reply = try await Self.operation(
            try requester.message(
                .pkcsReq, inner: request, recipient: authority.recipient, nonce: nonce, algorithms: algorithms),
            nonce: nonce, post: post, transport: transport, requester: requester, authority: authority)
        var polls = 0
        while reply.status == .pending {
            guard polls < configuration.maximumPollAttempts else {
                throw CertificateManagerError(
                    .enrollmentPending,
                    "the CA still answers PENDING after \(polls) polls (transaction \(requester.transactionID))")
            }
            polls += 1
            try await configuration.sleep(configuration.pollingInterval)
            nonce = try Self.nonce()
            reply = try await Self.operation(
                try requester.message(
                    .certPoll, inner: requester.issuerAndSubject(issuer: authority.certificate),
                    recipient: authority.recipient, nonce: nonce, algorithms: algorithms),
                nonce: nonce, post: post, transport: transport, requester: requester, authority: authority)
        }
        if reply.status == .failure { throw Self.failure(reply) }

        let issued = try requester.certificates(inEnvelope: reply.content)
        let keyHash = try key.publicKeySHA1()
        guard let leaf = issued.first(where: { $0.publicKeyHash == keyHash }) else {
            throw CertificateManagerError(
                .enrollmentMalformedResponse, "the CertRep holds no certificate for the generated key")
        }
        guard authority.issued(leaf) else {
            throw CertificateManagerError(
                .enrollmentUntrustedCA, "the issued certificate is not signed by the CA",
                certificateSubject: leaf.subjectSummary)
        }
        let above = issued.filter { $0 != leaf }
        return EnrollmentResult(
            identity: ClientIdentity(certificate: leaf, privateKey: key),
            certificateChain: [leaf] + (above.isEmpty ? authority.chain : above), polls: polls)
    }

    /// Sends one pkiMessage and reads the CertRep that answers it.
    private static func operation(
        _ message: Data, nonce: [UInt8], post: Bool, transport: SCEPTransport, requester: SCEPRequester,
        authority: SCEPCertificateAuthority
    ) async throws -> SCEPReply {
        try Task.checkCancellation()
        let answer = try await send(transport, "PKIOperation") {
            post
                ? try await transport.post("PKIOperation", body: message)
                : try await transport.get("PKIOperation", message: message.base64EncodedString())
        }
        return try SCEPReply(answer, signers: authority.signers, transactionID: requester.transactionID, nonce: nonce)
    }

    /// The error of a FAILURE CertRep, naming its failInfo (and the CA's failInfoText, when given).
    private static func failure(_ reply: SCEPReply) -> CertificateManagerError {
        let text = reply.failInfoText.map { ": \"\($0)\"" } ?? ""
        guard let info = reply.failInfo else {
            return CertificateManagerError(.enrollmentRejected, "the CA refused the request (no failInfo)\(text)")
        }
        if info == .badRequest {
            return CertificateManagerError(
                .enrollmentBadRequest,
                "the CA refused the request with failInfo \(info): a wrong challenge password, or a request its "
                    + "policy refuses\(text)")
        }
        return CertificateManagerError(.enrollmentRejected, "the CA refused the request with failInfo \(info)\(text)")
    }

    // MARK: Server operations

    /// GetCACaps, upper-cased (RFC 8894 §3.5.2: case-insensitive). A server that answers it with an HTTP error has
    /// no capabilities to tell (older servers): the defaults apply.
    private static func capabilities(_ transport: SCEPTransport) async throws -> Set<String> {
        let text: Data
        do {
            text = try await transport.get("GetCACaps")
        } catch let failure where failure.kind == .status {
            return []
        } catch {
            throw describe(error, transport, "GetCACaps")
        }
        return Set(
            String(decoding: text, as: UTF8.self).split(whereSeparator: \.isNewline)
                .map { $0.trimmingCharacters(in: .whitespaces).uppercased() }.filter { !$0.isEmpty })
    }

    private static func send(
        _ transport: SCEPTransport, _ operation: String, _ body: () async throws -> Data
    ) async throws -> Data {
        do { return try await body() } catch { throw describe(error, transport, operation) }
    }

    /// A transport failure in the manager's terms.
    private static func describe(_ error: any Error, _ transport: SCEPTransport, _ operation: String) -> any Error {
        guard let failure = error as? FetchError else { return error }
        let server = transport.url
        switch failure.kind {
        case .badURL:
            return CertificateManagerError(.invalidEnrollmentRequest, "\(server) is not an http:// URL")
        case .cancelled:
            return CancellationError()
        case .unresolved:
            return CertificateManagerError(.enrollmentServerUnreachable, "\(operation) to \(server): the name does not resolve")
        case .unreachable:
            let cause = failure.detail == 0 ? "the connection closed" : String(cString: strerror(failure.detail))
            return CertificateManagerError(.enrollmentServerUnreachable, "\(operation) to \(server): \(cause)")
        case .timeout:
            return CertificateManagerError(
                .enrollmentServerUnreachable, "\(operation) to \(server): no answer within \(transport.timeout)")
        case .status:
            return CertificateManagerError(
                .enrollmentServerError, "\(operation) to \(server): the server answered HTTP \(failure.detail)")
        case .malformed:
            return CertificateManagerError(
                .enrollmentMalformedResponse, "\(operation) to \(server): the answer is not readable HTTP")
        case .tooLarge:
            return CertificateManagerError(
                .enrollmentMalformedResponse, "\(operation) to \(server): the answer is larger than \(SCEPTransport.maximumAnswer) bytes")
        }
    }

    // MARK: Checks, nonces and the pending key

    private static func check(_ configuration: EnrollmentConfiguration) throws {
        guard configuration.url.lowercased().hasPrefix("http://") else {
            throw CertificateManagerError(
                .invalidEnrollmentRequest,
                "\(configuration.url) is not an http:// URL "
                    + "(SCEP protects its own messages; pin the CA with caFingerprint)")
        }
        guard [2048, 3072, 4096].contains(configuration.keySize) else {
            throw CertificateManagerError(
                .invalidEnrollmentRequest, "the RSA key size must be 2048, 3072 or 4096, not \(configuration.keySize)")
        }
        guard configuration.caFingerprint.map({ $0.count == 32 }) ?? true, configuration.raFingerprint.map({ $0.count == 32 }) ?? true
        else {
            throw CertificateManagerError(.invalidEnrollmentRequest, "a CA or RA fingerprint must be 32 bytes (SHA-256)")
        }
        guard configuration.maximumPollAttempts >= 0, configuration.timeout > .zero else {
            throw CertificateManagerError(
                .invalidEnrollmentRequest, "the timeout must be positive and the poll count not negative")
        }
    }

    /// A fresh 16-byte senderNonce (RFC 8894 §3.2.1.5).
    private static func nonce() throws -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: 16)
        // RAND_bytes: 1 on success.
        guard RAND_bytes(&nonce, Int32(nonce.count)) == 1 else {
            throw CertificateManagerError(.invalidEnrollmentRequest, "no random bytes for the nonce")
        }
        return nonce
    }

    /// The enrollment's RSA key pair, made where the configuration says.
    private static func makeKey(_ configuration: EnrollmentConfiguration) throws -> AsymmetricKey {
        let bits = configuration.keySize
        switch configuration.keyLocation {
        case .keychain:
            do { return try AsymmetricKey.generateRSA(bits: bits) } catch {
                throw CertificateManagerError(.invalidEnrollmentRequest, "an RSA-\(bits) key cannot be generated")
            }
        case .tpm:
            do { return try TPMKey.generateRSA(bits: bits).privateKey() } catch let error as HardwareKeyError {
                throw CertificateManagerError(.enrollmentKeyUnavailable, "an RSA-\(bits) key in the TPM: \(error.reason)")
            } catch {
                throw CertificateManagerError(.enrollmentKeyUnavailable, "an RSA-\(bits) key in the TPM cannot be made")
            }
        case .token(let token, let pin):
            do { return try token.generateRSA(bits: bits, label: clientIdentityLabel, pin: pin).privateKey() } catch let error as HardwareKeyError {
                throw CertificateManagerError(.enrollmentKeyUnavailable, "an RSA-\(bits) key on the token: \(error.reason)")
            } catch {
                throw CertificateManagerError(.enrollmentKeyUnavailable, "an RSA-\(bits) key on the token \(token.label) cannot be made")
            }
        }
    }

    /// Puts the generated key in the keychain under the manager's group, labelled as an unfinished enrollment (a
    /// key on a token stays there alone: the token keeps it).
    private func storeEnrollmentKey(_ key: AsymmetricKey) throws {
        guard !(key.heldBy is PKCS11Key) else { return }
        do {
            let item = try KeyItemAttributes(key, label: Self.enrollmentKeyLabel)
            var attributes = item.attributes
            attributes[.accessGroup] = .string(accessGroup)
            try keychain.add(.key, attributes: attributes, data: item.data)
        } catch {
            throw Self.keychainError(error, "storing the generated key")
        }
    }

    /// Deletes the unfinished enrollment's key (the identity, when stored, holds its own copy of it). A key on a
    /// token is deleted from the token only when the enrollment failed: the stored identity is the token's key.
    private func removeEnrollmentKey(_ key: AsymmetricKey, failed: Bool) {
        if let tokenKey = key.heldBy as? PKCS11Key {
            if failed { try? tokenKey.token.delete(tokenKey) }
            return
        }
        guard let hash = try? key.publicKeySHA1() else { return }
        removeEnrollmentKeys(matching: [.applicationLabel: .data(hash)])
    }

    /// Deletes the enrollment keys of the manager's group that have `attributes` (all of them for none).
    private func removeEnrollmentKeys(matching attributes: ItemAttributes) {
        var matching = attributes
        matching[.label] = .string(Self.enrollmentKeyLabel)
        matching[.accessGroup] = .string(accessGroup)
        _ = try? keychain.delete(ItemQuery(.key, matching: matching, limit: .all))
    }
}
