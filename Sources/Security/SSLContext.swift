import Foundation
import Certificates
import TLS
import Trust

/// A Secure Transport context (Apple's `SSLContextRef`): one TLS session, configured, then driven by
/// ``SSLHandshake(_:)``, ``SSLRead(_:_:_:_:)``, ``SSLWrite(_:_:_:_:)`` and ``SSLClose(_:)``. As Apple's, meant for
/// one thread at a time; its calls are serialized by a lock all the same.
public final class SSLContext: @unchecked Sendable {
    // @unchecked: every member is read and written only while holding `lock` (recursive: an I/O function the
    // engine calls may ask the context something).
    private let lock = NSRecursiveLock()
    let side: SSLProtocolSide
    private var readFunc: SSLReadFunc?
    private var writeFunc: SSLWriteFunc?
    private var connection: SSLConnectionRef?
    private var peerDomainName: String?
    var identity: TLSIdentity?
    private var breakOnServerAuth = false
    private var breakOnClientAuth = false
    private var minimumVersion = TLSVersion.tls12
    private var maximumVersion = TLSVersion.tls13
    private var applicationProtocols: [String] = []
    var clientAuthentication = TLSEngine.ClientAuthentication.none
    var engine: TLSEngine?
    var state = SSLSessionState.idle
    /// What the peer presented, as a SecTrust for SSLCopyPeerTrust (made when first asked).
    private var peerTrust: SecTrust?
    /// Why the engine rejected the peer's chain, when it did.
    var rejectedTrust: TrustResult?
    /// The application's peer ID (``SSLSetPeerID(_:_:_:)``): a client's sessions are kept under it for resumption.
    /// Kept where ``SSLGetPeerID(_:_:_:)`` can point.
    private var peerID: StableBytes?
    /// Every session option as set (``SSLGetSessionOption(_:_:_:)``); the break options also below.
    private var options: [SSLSessionOption: Bool] = [:]
    /// Every protocol version was disabled (``SSLSetProtocolVersionEnabled(_:_:_:)``): no handshake can run.
    private var noVersionEnabled = false
    /// The cipher suites allowed (``SSLSetEnabledCiphers(_:_:_:)``); nil: every supported one.
    private var enabledCipherSuites: [SSLCipherSuite]?
    private var sessionTickets = true
    /// The context's own anchors (``SSLSetTrustedRoots(_:_:_:)``): nil for the system's; with `trustedRootsOnly`
    /// the system's are no longer used.
    private var trustedRoots: [SecCertificate]?
    private var trustedRootsOnly = false
    /// Apple's deprecated relaxations of the context's own evaluation.
    private var verifiesCertificates = true
    private var allowsAnyRoot = false
    private var allowsExpiredCertificates = false
    private var allowsExpiredRoots = false
    /// A server's CertificateRequest names: the certificates given (``SSLSetCertificateAuthorities(_:_:_:)``) and
    /// the DER names sent, theirs and those added with ``SSLAddDistinguishedName(_:_:_:)``.
    private var certificateAuthorities: [SecCertificate]?
    var distinguishedNames: [[UInt8]] = []
    private var stapledResponse: [UInt8]?
    private var diffieHellmanParameters: StableBytes?
    private var rsaBlinding = true
    private var encryptionCertificates: NSArray?
    /// ``SSLSetError(_:_:)``'s status, for the next handshake step.
    var outOfBandError: OSStatus?
    /// A server: whether the client's certificate passed this context's evaluation (nil: none judged).
    var clientCertificateAccepted: Bool?
    /// Sessions kept for resumption by peer ID, process-wide, as Secure Transport's session cache.
    static let sessions = TLSSessionCache()
    /// A server breaking on client authentication: the client's certificate arrived, and the break is still to be
    /// reported. (libssl can suspend a handshake for the application on a client only; a server reports the break
    /// when its side of the handshake is done, before any application data is read or written.)
    private var clientAuthenticationBreak = false

    init(side: SSLProtocolSide) { self.side = side }

    /// Bytes at an address that stays put while the context holds them (Apple's getters return pointers into the
    /// context's copy).
    final class StableBytes {
        let buffer: UnsafeMutableRawBufferPointer
        var bytes: [UInt8] { Array(buffer.prefix(count)) }

        let count: Int
        var address: UnsafeMutableRawPointer? { count > 0 ? buffer.baseAddress : nil }

        init(_ bytes: [UInt8]) {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
            bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
            self.buffer = buffer
            count = bytes.count
        }

        deinit { buffer.deallocate() }
    }

    func locked<R>(_ body: () throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    // MARK: Configuration (before the handshake)

    func configure(_ body: () -> OSStatus) -> OSStatus {
        locked { state == .idle ? body() : errSecBadReq }
    }

    func setIO(read: SSLReadFunc, write: SSLWriteFunc) -> OSStatus {
        configure {
            readFunc = read
            writeFunc = write
            return errSecSuccess
        }
    }

    func setConnection(_ value: SSLConnectionRef?) -> OSStatus {
        configure {
            connection = value
            return errSecSuccess
        }
    }

    var currentConnection: SSLConnectionRef? { locked { connection } }

    func setPeerDomainName(_ name: String?) -> OSStatus {
        configure {
            peerDomainName = name
            return errSecSuccess
        }
    }

    var currentPeerDomainName: String? { locked { peerDomainName } }

    func setIdentity(_ value: TLSIdentity?) -> OSStatus {
        configure {
            identity = value
            return errSecSuccess
        }
    }

    func setPeerID(_ value: [UInt8]?) -> OSStatus {
        configure {
            peerID = value.map(StableBytes.init)
            return errSecSuccess
        }
    }

    var currentPeerID: (address: UnsafeRawPointer?, count: Int) {
        locked { (peerID?.address.map { UnsafeRawPointer($0) }, peerID?.count ?? 0) }
    }

    func setOption(_ option: SSLSessionOption, _ value: Bool) -> OSStatus {
        configure {
            switch option {
            case .breakOnServerAuth: breakOnServerAuth = value
            case .breakOnClientAuth: breakOnClientAuth = value
            case .enableSessionTickets: sessionTickets = value
            default: break  // kept for the getter, without effect here: libssl decides false start and records
            }
            options[option] = value
            return errSecSuccess
        }
    }

    func option(_ option: SSLSessionOption) -> Bool {
        locked { option == .enableSessionTickets ? sessionTickets : options[option] ?? false }
    }

    func setVersion(_ version: SSLProtocol, minimum: Bool) -> OSStatus {
        configure {
            let mapped: TLSVersion
            switch version {
            case .tlsProtocol12: mapped = .tls12
            case .tlsProtocol13, .tlsProtocolMaxSupported: mapped = .tls13
            default: return errSSLIllegalParam  // SSL 2/3, TLS 1.0/1.1 and DTLS are not offered
            }
            if noVersionEnabled {
                noVersionEnabled = false
                (minimumVersion, maximumVersion) = (mapped, mapped)
            }
            if minimum { minimumVersion = mapped } else { maximumVersion = mapped }
            return errSecSuccess
        }
    }

    /// The versions allowed, nil when none is.
    var versions: (minimum: TLSVersion, maximum: TLSVersion)? { locked { noVersionEnabled ? nil : (minimumVersion, maximumVersion) } }

    /// Sets both bounds, or none (`nil`: every version disabled).
    func setVersions(_ bounds: (minimum: TLSVersion, maximum: TLSVersion)?) -> OSStatus {
        configure {
            if let bounds {
                guard bounds.minimum <= bounds.maximum else { return errSecParam }
                (minimumVersion, maximumVersion, noVersionEnabled) = (bounds.minimum, bounds.maximum, false)
            } else {
                noVersionEnabled = true
            }
            return errSecSuccess
        }
    }

    /// Runs `body` on the configuration (before the handshake), with exclusive access to it; nothing changes
    /// unless it succeeds.
    func reconfigure(_ body: (inout Configuration) -> OSStatus) -> OSStatus {
        configure {
            var configuration = snapshot()
            let status = body(&configuration)
            guard status == errSecSuccess else { return status }
            enabledCipherSuites = configuration.enabledCipherSuites
            trustedRoots = configuration.trustedRoots
            trustedRootsOnly = configuration.trustedRootsOnly
            verifiesCertificates = configuration.verifiesCertificates
            allowsAnyRoot = configuration.allowsAnyRoot
            allowsExpiredCertificates = configuration.allowsExpiredCertificates
            allowsExpiredRoots = configuration.allowsExpiredRoots
            certificateAuthorities = configuration.certificateAuthorities
            distinguishedNames = configuration.distinguishedNames
            stapledResponse = configuration.stapledResponse
            if configuration.diffieHellmanParameters != diffieHellmanParameters?.bytes {
                diffieHellmanParameters = configuration.diffieHellmanParameters.map(StableBytes.init)
            }
            encryptionCertificates = configuration.encryptionCertificates
            return errSecSuccess
        }
    }

    /// The settings the legacy functions change, as one value (read whenever, changed before the handshake).
    struct Configuration {
        var enabledCipherSuites: [SSLCipherSuite]?
        var trustedRoots: [SecCertificate]?
        var trustedRootsOnly: Bool
        var verifiesCertificates: Bool
        var allowsAnyRoot: Bool
        var allowsExpiredCertificates: Bool
        var allowsExpiredRoots: Bool
        var certificateAuthorities: [SecCertificate]?
        var distinguishedNames: [[UInt8]]
        var stapledResponse: [UInt8]?
        var diffieHellmanParameters: [UInt8]?
        var encryptionCertificates: NSArray?
    }

    /// The configuration as it is now.
    var configuration: Configuration { locked { snapshot() } }

    private func snapshot() -> Configuration {
        Configuration(
            enabledCipherSuites: enabledCipherSuites, trustedRoots: trustedRoots, trustedRootsOnly: trustedRootsOnly,
            verifiesCertificates: verifiesCertificates, allowsAnyRoot: allowsAnyRoot,
            allowsExpiredCertificates: allowsExpiredCertificates, allowsExpiredRoots: allowsExpiredRoots,
            certificateAuthorities: certificateAuthorities, distinguishedNames: distinguishedNames,
            stapledResponse: stapledResponse, diffieHellmanParameters: diffieHellmanParameters?.bytes,
            encryptionCertificates: encryptionCertificates)
    }

    /// Where ``SSLGetDiffieHellmanParams(_:_:_:)`` points: the context's copy.
    var diffieHellmanParameterBytes: (address: UnsafeMutableRawPointer?, count: Int) {
        locked { (diffieHellmanParameters?.address, diffieHellmanParameters?.count ?? 0) }
    }

    var rsaBlindingEnabled: Bool { locked { rsaBlinding } }

    func setRSABlinding(_ value: Bool) -> OSStatus {
        locked {
            rsaBlinding = value
            return errSecSuccess
        }
    }

    func setApplicationProtocols(_ names: [String]) -> OSStatus {
        configure {
            guard names.allSatisfy({ !$0.isEmpty && $0.utf8.count < 256 }) else { return errSecParam }
            applicationProtocols = names
            return errSecSuccess
        }
    }

    func setClientAuthentication(_ value: SSLAuthenticate) -> OSStatus {
        configure {
            guard side == .serverSide else { return errSecParam }
            switch value {
            case .neverAuthenticate: clientAuthentication = .none
            case .alwaysAuthenticate: clientAuthentication = .require
            case .tryAuthenticate: clientAuthentication = .request
            }
            return errSecSuccess
        }
    }

    // MARK: The session

    var sessionState: SSLSessionState { locked { state } }

    func handshake() -> OSStatus {
        locked {
            switch state {
            case .connected: return errSecSuccess
            case .closed: return errSSLClosedGraceful
            case .aborted: return errSSLClosedAbort
            case .idle, .handshake: break
            }
            if let error = outOfBandError, error == errSecCertificateExpired || error == errSecCertificateRevoked {
                // Apple's SSLSetError: these two end the session (Apple sends the matching alert first; libssl
                // sends alerts of its own making only, so this ends without one).
                outOfBandError = nil
                state = .closed
                return errSecSuccess
            }
            if engine == nil {
                guard let readFunc, let writeFunc, let connection, !noVersionEnabled else { return errSSLBadConfiguration }
                if side == .serverSide && identity == nil { return errSSLBadConfiguration }
                var settings = TLSEngine.Settings(role: side == .clientSide ? .client : .server) { [unowned self] chain in
                    self.judge(chain)
                }
                settings.serverName = peerDomainName
                settings.identity = identity
                settings.minimumVersion = minimumVersion
                settings.maximumVersion = maximumVersion
                settings.applicationProtocols = applicationProtocols
                settings.clientAuthentication = clientAuthentication
                settings.cipherSuites = enabledCipherSuites
                settings.sessionTickets = sessionTickets
                if side == .serverSide {
                    settings.certificateAuthorities = distinguishedNames
                    settings.stapledResponse = stapledResponse
                    settings.diffieHellmanParameters = diffieHellmanParameters?.bytes
                }
                if side == .clientSide, let peerID = peerID?.bytes {
                    settings.resumption = Self.sessions.take(peerID: peerID)
                    settings.sessionIssued = { Self.sessions.keep($0, peerID: peerID) }
                }
                do {
                    engine = try TLSEngine(settings, transport: FunctionTransport(read: readFunc, write: writeFunc, connection: connection))
                } catch {
                    return errSSLBadConfiguration
                }
                state = .handshake
            }
            guard let engine else { return errSSLInternal }
            switch engine.handshake() {
            case .done:
                if engine.sessionReused && side == .clientSide && !breakOnServerAuth {
                    // No certificates were exchanged: the session's chain is judged again, as a new one would be.
                    if case .reject = judge(engine.peerCertificates) {
                        state = .aborted
                        return status(of: .untrusted)
                    }
                }
                if clientAuthenticationBreak {
                    clientAuthenticationBreak = false
                    peerTrust = nil
                    return errSSLClientAuthCompleted
                }
                state = .connected
                return errSecSuccess
            case let step:
                return unfinished(step)
            }
        }
    }

    /// Apple's status for a handshake step that did not finish: would block, a pause for the application (its
    /// trust made anew when asked), or a failure, which ends the session.
    func unfinished(_ step: TLSEngine.Step) -> OSStatus {
        switch step {
        case .done: return errSecSuccess
        case .wouldBlock: return errSSLWouldBlock
        case .peerAuthenticationPending:
            peerTrust = nil
            return errSSLPeerAuthCompleted
        case .failed(let failure):
            state = .aborted
            return status(of: failure)
        }
    }

    /// The chain's judge: the application's, at a break; else this package's trust evaluator with the SSL policy
    /// (the server's name for a client; a client certificate for a server) and the context's anchors: the
    /// system's, the trusted roots added to them, or those roots alone. Apple's deprecated relaxations apply
    /// here: no verification accepts any chain; any root forgives an untrusted or missing root; expired
    /// certificates (and roots) forgive the validity period of the others (of the root).
    private func judge(_ chain: [Certificate]) -> TLSPeerVerdict {
        peerTrust = nil
        if side == .clientSide && breakOnServerAuth { return .pause }
        if side == .serverSide && breakOnClientAuth {
            clientAuthenticationBreak = !chain.isEmpty
            clientCertificateAccepted = chain.isEmpty ? nil : true
            return .accept
        }
        let verdict = evaluate(chain)
        if side == .serverSide && !chain.isEmpty {
            if case .accept = verdict { clientCertificateAccepted = true } else { clientCertificateAccepted = false }
        }
        return verdict
    }

    private func evaluate(_ chain: [Certificate]) -> TLSPeerVerdict {
        rejectedTrust = nil
        guard verifiesCertificates else { return .accept }
        let policy: TrustPolicy = side == .clientSide ? .sslServer(hostname: peerDomainName) : .sslClient
        let added = (trustedRoots ?? []).map(\.certificate)
        let anchors = trustedRootsOnly ? added : SystemAnchors.all + added
        // The user's and administrator's trust settings, as SecTrust consults them: their anchors only beside the
        // system's; a file that cannot be read refuses (it may hold a denial).
        let settings: TrustSettingsSet?
        do { settings = try TLSPeerVerdict.settings(TrustSettingsDomains.current, anchors: anchors) } catch { return .reject(nil) }
        let judged = TLSPeerVerdict.judging(chain, with: TrustEvaluator(anchors: anchors, policies: [policy], trustSettings: settings))
        guard let result = judged.result, !result.isTrusted else { return judged.verdict }
        if forgiven(result) { return .accept }
        rejectedTrust = result
        return judged.verdict
    }

    /// Whether the relaxations set forgive every failure of `result`.
    private func forgiven(_ result: TrustResult) -> Bool {
        guard allowsAnyRoot || allowsExpiredCertificates || allowsExpiredRoots else { return false }
        return result.statuses.enumerated().allSatisfy { index, status in
            let isRoot = index == result.statuses.count - 1 && status.certificate.isSelfIssued
            var allowed: [TrustFailureReason] = []
            if allowsAnyRoot { allowed += [.untrustedRoot, .missingIssuer] }
            if isRoot ? allowsExpiredRoots : allowsExpiredCertificates { allowed += [.expired, .notYetValid] }
            return status.reasons.allSatisfy(allowed.contains)
        }
    }

    func copyPeerTrust() -> SecTrust? {
        locked {
            if let peerTrust { return peerTrust }
            guard let chain = engine?.peerCertificates, !chain.isEmpty else { return nil }
            let policy = SecPolicyCreateSSL(side == .clientSide, peerDomainName.map { $0 as NSString })
            let trust = SecTrust(certificates: chain.map(SecCertificate.init), policies: [policy])
            peerTrust = trust
            return trust
        }
    }
}
