public import Foundation
import Certificates
import TLS
import Trust

// Secure Transport (Apple's SecureTransport.h): TLS over the caller's I/O functions, with Apple's names, values and
// OSStatus codes, so that Apple-platform code compiles and behaves the same. The protocol is libssl's (through the
// TLS module's TLSEngine); the peer's certificates are judged by this package's trust evaluator, or handed to the
// application as a SecTrust when it asked to break on authentication. TLS 1.2 and 1.3 only.

/// What the I/O functions are given: the value set by ``SSLSetConnection(_:_:)``.
public typealias SSLConnectionRef = UnsafeRawPointer
/// Reads up to `*dataLength` bytes into `data`; sets `*dataLength` to the count read. `noErr` when all were read,
/// `errSSLWouldBlock` when fewer (a non-blocking socket), `errSSLClosedGraceful` at the end of the stream.
public typealias SSLReadFunc = @convention(c) (SSLConnectionRef, UnsafeMutableRawPointer, UnsafeMutablePointer<Int>) -> OSStatus
/// Writes `*dataLength` bytes from `data`; sets `*dataLength` to the count written (`errSSLWouldBlock` when fewer).
public typealias SSLWriteFunc = @convention(c) (SSLConnectionRef, UnsafeRawPointer, UnsafeMutablePointer<Int>) -> OSStatus
/// An IANA TLS cipher suite number.
public typealias SSLCipherSuite = UInt16

public enum SSLProtocolSide: Int32, Sendable {
    case serverSide = 0
    case clientSide = 1
}

public enum SSLConnectionType: Int32, Sendable {
    case streamType = 0
    case datagramType = 1
}

public enum SSLProtocol: Int32, Sendable {
    case sslProtocolUnknown = 0
    case sslProtocol2 = 1
    case sslProtocol3 = 2
    case sslProtocol3Only = 3
    case tlsProtocol1 = 4
    case tlsProtocol1Only = 5
    case sslProtocolAll = 6
    case tlsProtocol11 = 7
    case tlsProtocol12 = 8
    case dtlsProtocol1 = 9
    case tlsProtocol13 = 10
    case dtlsProtocol12 = 11
    case tlsProtocolMaxSupported = 999
}

public enum SSLSessionOption: Int32, Sendable {
    case breakOnServerAuth = 0
    case breakOnCertRequested = 1
    case breakOnClientAuth = 2
    case falseStart = 3
    case sendOneByteRecord = 4
    case allowServerIdentityChange = 5
    case fallback = 6
    case breakOnClientHello = 7
    case allowRenegotiation = 8
    case enableSessionTickets = 9
}

public enum SSLSessionState: Int32, Sendable {
    case idle = 0
    case handshake = 1
    case connected = 2
    case closed = 3
    case aborted = 4
}

/// Where a client certificate exchange stands (``SSLGetClientCertificateState(_:_:)``).
public enum SSLClientCertificateState: Int32, Sendable {
    /// The server did not ask for a certificate, and the client sent none.
    case certNone = 0
    /// The server asked, and the client sent none (or, on a server, none arrived yet).
    case certRequested = 1
    /// The server asked and the client sent one (on a server: and it passed the server's evaluation).
    case certSent = 2
    /// The client sent one and it failed the server's evaluation.
    case certRejected = 3
}

public enum SSLAuthenticate: Int32, Sendable {
    case neverAuthenticate = 0
    case alwaysAuthenticate = 1
    case tryAuthenticate = 2
}

// Secure Transport's result codes (SecureTransport.h), -9800 to -9865.
public let errSSLProtocol: OSStatus = -9800
public let errSSLNegotiation: OSStatus = -9801
public let errSSLFatalAlert: OSStatus = -9802
public let errSSLWouldBlock: OSStatus = -9803
public let errSSLSessionNotFound: OSStatus = -9804
public let errSSLClosedGraceful: OSStatus = -9805
public let errSSLClosedAbort: OSStatus = -9806
public let errSSLXCertChainInvalid: OSStatus = -9807
public let errSSLBadCert: OSStatus = -9808
public let errSSLCrypto: OSStatus = -9809
public let errSSLInternal: OSStatus = -9810
public let errSSLModuleAttach: OSStatus = -9811
public let errSSLUnknownRootCert: OSStatus = -9812
public let errSSLNoRootCert: OSStatus = -9813
public let errSSLCertExpired: OSStatus = -9814
public let errSSLCertNotYetValid: OSStatus = -9815
public let errSSLClosedNoNotify: OSStatus = -9816
public let errSSLBufferOverflow: OSStatus = -9817
public let errSSLBadCipherSuite: OSStatus = -9818
public let errSSLPeerUnexpectedMsg: OSStatus = -9819
public let errSSLPeerBadRecordMac: OSStatus = -9820
public let errSSLPeerDecryptionFail: OSStatus = -9821
public let errSSLPeerRecordOverflow: OSStatus = -9822
public let errSSLPeerDecompressFail: OSStatus = -9823
public let errSSLPeerHandshakeFail: OSStatus = -9824
public let errSSLPeerBadCert: OSStatus = -9825
public let errSSLPeerUnsupportedCert: OSStatus = -9826
public let errSSLPeerCertRevoked: OSStatus = -9827
public let errSSLPeerCertExpired: OSStatus = -9828
public let errSSLPeerCertUnknown: OSStatus = -9829
public let errSSLIllegalParam: OSStatus = -9830
public let errSSLPeerUnknownCA: OSStatus = -9831
public let errSSLPeerAccessDenied: OSStatus = -9832
public let errSSLPeerDecodeError: OSStatus = -9833
public let errSSLPeerDecryptError: OSStatus = -9834
public let errSSLPeerExportRestriction: OSStatus = -9835
public let errSSLPeerProtocolVersion: OSStatus = -9836
public let errSSLPeerInsufficientSecurity: OSStatus = -9837
public let errSSLPeerInternalError: OSStatus = -9838
public let errSSLPeerUserCancelled: OSStatus = -9839
public let errSSLPeerNoRenegotiation: OSStatus = -9840
public let errSSLPeerAuthCompleted: OSStatus = -9841
public let errSSLServerAuthCompleted: OSStatus = -9841
public let errSSLClientAuthCompleted: OSStatus = -9841
public let errSSLClientCertRequested: OSStatus = -9842
public let errSSLHostNameMismatch: OSStatus = -9843
public let errSSLConnectionRefused: OSStatus = -9844
public let errSSLDecryptionFail: OSStatus = -9845
public let errSSLBadRecordMac: OSStatus = -9846
public let errSSLRecordOverflow: OSStatus = -9847
public let errSSLBadConfiguration: OSStatus = -9848
public let errSSLUnexpectedRecord: OSStatus = -9849
public let errSSLWeakPeerEphemeralDHKey: OSStatus = -9850
public let errSSLClientHelloReceived: OSStatus = -9851
public let errSSLTransportReset: OSStatus = -9852
public let errSSLNetworkTimeout: OSStatus = -9853
public let errSSLConfigurationFailed: OSStatus = -9854
public let errSSLUnsupportedExtension: OSStatus = -9855
public let errSSLUnexpectedMessage: OSStatus = -9856
public let errSSLDecompressFail: OSStatus = -9857
public let errSSLHandshakeFail: OSStatus = -9858
public let errSSLDecodeError: OSStatus = -9859
public let errSSLInappropriateFallback: OSStatus = -9860
public let errSSLMissingExtension: OSStatus = -9861
public let errSSLBadCertificateStatusResponse: OSStatus = -9862
public let errSSLCertificateRequired: OSStatus = -9863
public let errSSLUnknownPSKIdentity: OSStatus = -9864
public let errSSLUnrecognizedName: OSStatus = -9865
/// App Transport Security's verdicts (Apple's URL loading applies them; this library has no ATS, so no call here
/// returns them).
public let errSSLATSViolation: OSStatus = -9880
public let errSSLATSMinimumVersionViolation: OSStatus = -9881
public let errSSLATSCiphersuiteViolation: OSStatus = -9882
public let errSSLATSMinimumKeySizeViolation: OSStatus = -9883
public let errSSLATSLeafCertificateHashAlgorithmViolation: OSStatus = -9884
public let errSSLATSCertificateHashAlgorithmViolation: OSStatus = -9885
public let errSSLATSCertificateTrustViolation: OSStatus = -9886
/// Early application data rejected by the peer (TLS 1.3 0-RTT, which Secure Transport here does not send).
public let errSSLEarlyDataRejected: OSStatus = -9890

/// `SSLSetSessionConfig`'s configuration names (Apple's values).
nonisolated(unsafe) public let kSSLSessionConfig_default: CFString = "default"
nonisolated(unsafe) public let kSSLSessionConfig_ATSv1: CFString = "ATSv1"
nonisolated(unsafe) public let kSSLSessionConfig_ATSv1_noPFS: CFString = "ATSv1_noPFS"
nonisolated(unsafe) public let kSSLSessionConfig_standard: CFString = "standard"
nonisolated(unsafe) public let kSSLSessionConfig_RC4_fallback: CFString = "RC4_fallback"
nonisolated(unsafe) public let kSSLSessionConfig_TLSv1_fallback: CFString = "TLSv1_fallback"
nonisolated(unsafe) public let kSSLSessionConfig_TLSv1_RC4_fallback: CFString = "TLSv1_RC4_fallback"
nonisolated(unsafe) public let kSSLSessionConfig_legacy: CFString = "legacy"
nonisolated(unsafe) public let kSSLSessionConfig_legacy_DHE: CFString = "legacy_DHE"
nonisolated(unsafe) public let kSSLSessionConfig_anonymous: CFString = "anonymous"
nonisolated(unsafe) public let kSSLSessionConfig_3DES_fallback: CFString = "3DES_fallback"
nonisolated(unsafe) public let kSSLSessionConfig_TLSv1_3DES_fallback: CFString = "TLSv1_3DES_fallback"

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
    private var identity: TLSIdentity?
    private var breakOnServerAuth = false
    private var breakOnClientAuth = false
    private var minimumVersion = TLSVersion.tls12
    private var maximumVersion = TLSVersion.tls13
    private var applicationProtocols: [String] = []
    private var clientAuthentication = TLSEngine.ClientAuthentication.none
    private var engine: TLSEngine?
    private var state = SSLSessionState.idle
    /// What the peer presented, as a SecTrust for SSLCopyPeerTrust (made when first asked).
    private var peerTrust: SecTrust?
    /// Why the engine rejected the peer's chain, when it did.
    private var rejectedTrust: TrustResult?
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
    private var distinguishedNames: [[UInt8]] = []
    private var stapledResponse: [UInt8]?
    private var diffieHellmanParameters: StableBytes?
    private var rsaBlinding = true
    private var encryptionCertificates: NSArray?
    /// ``SSLSetError(_:_:)``'s status, for the next handshake step.
    private var outOfBandError: OSStatus?
    /// A server: whether the client's certificate passed this context's evaluation (nil: none judged).
    private var clientCertificateAccepted: Bool?
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
    private func unfinished(_ step: TLSEngine.Step) -> OSStatus {
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

    // MARK: What the legacy functions read

    /// What the peer presented, leaf first (empty before its certificates arrive).
    var peerCertificates: [Certificate] { locked { engine?.peerCertificates ?? [] } }

    /// A server: the name the client asked for (SNI).
    var requestedPeerName: String? { locked { side == .serverSide ? engine?.requestedServerName : nil } }

    /// A client: the CA names the server asked for; a server: its own.
    var acceptableDistinguishedNames: [[UInt8]] {
        locked { side == .serverSide ? distinguishedNames : engine?.peerCertificateAuthorities ?? [] }
    }

    var clientCertificateState: SSLClientCertificateState {
        locked {
            guard let engine else { return .certNone }
            if side == .clientSide {
                guard engine.certificateRequested else { return .certNone }
                return identity == nil ? .certRequested : .certSent
            }
            guard clientAuthentication != .none else { return .certNone }
            switch clientCertificateAccepted {
            case true?: return .certSent
            case false?: return .certRejected
            case nil: return .certRequested
            }
        }
    }

    /// Apple's SSLSetError: kept for the next handshake step.
    func setError(_ status: OSStatus) -> OSStatus {
        locked {
            outOfBandError = status
            return errSecSuccess
        }
    }

    /// A new handshake: before the first, the first; on an established session, ``TLSEngine/renegotiate()``.
    func rehandshake() -> OSStatus {
        locked {
            switch state {
            case .closed: return errSSLClosedGraceful
            case .aborted: return errSSLClosedAbort
            case .handshake: return errSecBadReq
            case .idle: return handshake()
            case .connected: break
            }
            guard let engine else { return errSSLInternal }
            state = .handshake
            switch engine.renegotiate() {
            case .done:
                state = .connected
                return errSecSuccess
            case let step:
                return unfinished(step)  // would block: SSLHandshake goes on with it
            }
        }
    }

    /// The deprecated SSLDisposeContext: the session ends here, without close_notify, and its libssl state goes.
    func dispose() {
        locked {
            engine = nil
            if state != .closed { state = .aborted }
        }
    }

    func read(_ buffer: UnsafeMutableRawBufferPointer, _ processed: inout Int) -> OSStatus {
        locked {
            processed = 0
            if state != .connected {
                let status = handshake()
                guard status == errSecSuccess else { return status }
            }
            guard let engine else { return errSSLInternal }
            let (count, step) = engine.read(into: buffer)
            processed = count
            if count > 0 || buffer.count == 0 { return errSecSuccess }
            return ioStatus(step)
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer, _ processed: inout Int) -> OSStatus {
        locked {
            processed = 0
            if state != .connected {
                let status = handshake()
                guard status == errSecSuccess else { return status }
            }
            guard let engine else { return errSSLInternal }
            let (count, step) = engine.write(bytes)
            processed = count
            return step == .done ? errSecSuccess : ioStatus(step)
        }
    }

    func close() -> OSStatus {
        locked {
            defer { state = .closed }
            // Also after the peer's close_notify: ours marks the session as ended cleanly (libssl resumes no session
            // whose connection ended without it).
            guard state == .connected || state == .closed, let engine, engine.isHandshakeComplete else { return errSecSuccess }
            switch engine.close() {
            case .done, .wouldBlock: return errSecSuccess
            case .peerAuthenticationPending: return errSecSuccess
            case .failed(let failure): return failure == .closedAbort || failure == .closedGraceful ? errSecSuccess : status(of: failure)
            }
        }
    }

    var bufferedReadSize: Int { locked { engine?.bufferedReadSize ?? 0 } }
    var negotiatedVersion: SSLProtocol {
        locked {
            switch engine?.negotiatedVersion {
            case .tls12: .tlsProtocol12
            case .tls13: .tlsProtocol13
            case nil: .sslProtocolUnknown
            }
        }
    }
    var negotiatedCipher: SSLCipherSuite? { locked { state == .connected ? engine?.negotiatedCipherSuite : nil } }
    var selectedApplicationProtocol: String? { locked { engine?.selectedApplicationProtocol } }

    private func ioStatus(_ step: TLSEngine.Step) -> OSStatus {
        switch step {
        case .done: return errSecSuccess
        case .wouldBlock: return errSSLWouldBlock
        case .peerAuthenticationPending: return errSSLPeerAuthCompleted
        case .failed(.closedGraceful):
            state = .closed
            return errSSLClosedGraceful
        case .failed(.closedAbort):
            state = .aborted
            return errSSLClosedNoNotify
        case .failed(let failure):
            state = .aborted
            return status(of: failure)
        }
    }

    /// Apple's status for an engine failure.
    private func status(of failure: TLSEngine.Failure) -> OSStatus {
        switch failure {
        case .untrusted:
            let reasons = Set((rejectedTrust ?? engine?.rejection)?.statuses.flatMap(\.reasons) ?? [])
            if reasons.contains(.hostnameMismatch) { return errSSLHostNameMismatch }
            if reasons.contains(.expired) { return errSSLCertExpired }
            if reasons.contains(.notYetValid) { return errSSLCertNotYetValid }
            if reasons.contains(.untrustedRoot) { return errSSLUnknownRootCert }
            if reasons.contains(.missingIssuer) { return errSSLNoRootCert }
            return errSSLXCertChainInvalid
        case .alert(let description): return Self.alertStatus(description)
        case .version: return errSSLNegotiation
        case .closedAbort: return errSSLClosedAbort
        case .closedGraceful: return errSSLClosedGraceful
        case .protocolViolation: return errSSLProtocol
        case .transport(let status): return status
        }
    }

    /// RFC 8446 §6 alert descriptions as Secure Transport reports a peer's.
    static func alertStatus(_ description: Int32) -> OSStatus {
        switch description {
        case 10: errSSLPeerUnexpectedMsg
        case 20: errSSLPeerBadRecordMac
        case 21: errSSLPeerDecryptionFail
        case 22: errSSLPeerRecordOverflow
        case 40: errSSLPeerHandshakeFail
        case 42: errSSLPeerBadCert
        case 43: errSSLPeerUnsupportedCert
        case 44: errSSLPeerCertRevoked
        case 45: errSSLPeerCertExpired
        case 46: errSSLPeerCertUnknown
        case 47: errSSLIllegalParam
        case 48: errSSLPeerUnknownCA
        case 49: errSSLPeerAccessDenied
        case 50: errSSLPeerDecodeError
        case 51: errSSLPeerDecryptError
        case 70: errSSLPeerProtocolVersion
        case 71: errSSLPeerInsufficientSecurity
        case 80: errSSLPeerInternalError
        case 86: errSSLInappropriateFallback
        case 90: errSSLPeerUserCancelled
        case 100: errSSLPeerNoRenegotiation
        case 109: errSSLMissingExtension
        case 110: errSSLUnsupportedExtension
        case 112: errSSLUnrecognizedName
        case 113: errSSLBadCertificateStatusResponse
        case 115: errSSLUnknownPSKIdentity
        case 116: errSSLCertificateRequired
        default: errSSLFatalAlert
        }
    }
}

/// The caller's I/O functions as the engine's transport.
private final class FunctionTransport: TLSTransport {
    let readFunc: SSLReadFunc
    let writeFunc: SSLWriteFunc
    let connection: SSLConnectionRef

    init(read: SSLReadFunc, write: SSLWriteFunc, connection: SSLConnectionRef) {
        readFunc = read
        writeFunc = write
        self.connection = connection
    }

    func receive(into buffer: UnsafeMutableRawBufferPointer) -> TLSTransportResult {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .wouldBlock }
        var length = buffer.count
        let status = readFunc(connection, base, &length)
        // Bytes read count whatever the status says (a short read comes with errSSLWouldBlock).
        if length > 0 { return .transferred(min(length, buffer.count)) }
        switch status {
        case errSecSuccess, errSSLWouldBlock: return .wouldBlock
        case errSSLClosedGraceful, errSSLClosedNoNotify: return .closed
        default: return .failed(status)
        }
    }

    func send(_ bytes: UnsafeRawBufferPointer) -> TLSTransportResult {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return .transferred(0) }
        var length = bytes.count
        let status = writeFunc(connection, base, &length)
        if length > 0 { return .transferred(min(length, bytes.count)) }
        switch status {
        case errSecSuccess, errSSLWouldBlock: return .wouldBlock
        default: return .failed(status)
        }
    }
}

// MARK: The functions

/// A new context for one side of a TLS stream; nil for a datagram (DTLS is not offered).
@discardableResult
public func SSLCreateContext(_ alloc: AnyObject?, _ protocolSide: SSLProtocolSide, _ connectionType: SSLConnectionType) -> SSLContext? {
    connectionType == .streamType ? SSLContext(side: protocolSide) : nil
}

@discardableResult
public func SSLSetIOFuncs(_ context: SSLContext, _ readFunc: SSLReadFunc, _ writeFunc: SSLWriteFunc) -> OSStatus {
    context.setIO(read: readFunc, write: writeFunc)
}

@discardableResult
public func SSLSetConnection(_ context: SSLContext, _ connection: SSLConnectionRef?) -> OSStatus {
    context.setConnection(connection)
}

@discardableResult
public func SSLGetConnection(_ context: SSLContext, _ connection: UnsafeMutablePointer<SSLConnectionRef?>) -> OSStatus {
    connection.pointee = context.currentConnection
    return errSecSuccess
}

/// An opaque identifier of the peer (host and port, say): a client's sessions are kept under it, process-wide, and a
/// later context with the same ID resumes one (each used once). A resumed session's chain is judged again (or, with
/// `.breakOnServerAuth`, available to ``SSLCopyPeerTrust(_:_:)`` as before).
@discardableResult
public func SSLSetPeerID(_ context: SSLContext, _ peerID: UnsafeRawPointer?, _ peerIDLen: Int) -> OSStatus {
    guard let peerID, peerIDLen > 0 else { return context.setPeerID(nil) }
    return context.setPeerID(Array(UnsafeRawBufferPointer(start: peerID, count: peerIDLen)))
}

/// The name the server must prove (and the SNI sent); a client's.
@discardableResult
public func SSLSetPeerDomainName(_ context: SSLContext, _ peerName: UnsafePointer<CChar>?, _ peerNameLen: Int) -> OSStatus {
    guard let peerName, peerNameLen > 0 else { return context.setPeerDomainName(nil) }
    let bytes = UnsafeRawBufferPointer(start: peerName, count: peerNameLen)
    // A C caller may count the terminating NUL.
    let name = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    return context.setPeerDomainName(name.isEmpty ? nil : name)
}

@discardableResult
public func SSLGetPeerDomainNameLength(_ context: SSLContext, _ peerNameLen: UnsafeMutablePointer<Int>) -> OSStatus {
    peerNameLen.pointee = context.currentPeerDomainName?.utf8.count ?? 0
    return errSecSuccess
}

/// The certificate this side presents: an array whose first element is a ``SecIdentity`` and whose others are
/// ``SecCertificate``s sent after it (intermediates). The private key is used where it is.
@discardableResult
public func SSLSetCertificate(_ context: SSLContext, _ certRefs: CFArray?) -> OSStatus {
    guard let certRefs, certRefs.count > 0 else { return context.setIdentity(nil) }
    guard let identity = certRefs[0] as? SecIdentity else { return errSecParam }
    var chain: [Certificate] = []
    for index in 1..<certRefs.count {
        guard let certificate = certRefs[index] as? SecCertificate else { return errSecParam }
        chain.append(certificate.certificate)
    }
    return context.setIdentity(
        TLSIdentity(certificate: identity.certificate.certificate, privateKey: identity.privateKey.key, chain: chain))
}

/// `kSSLSessionOptionBreakOnServerAuth` (a client) and `…BreakOnClientAuth` (a server): the handshake stops with
/// `errSSLPeerAuthCompleted` once the peer's certificates arrive; the application evaluates ``SSLCopyPeerTrust(_:_:)``
/// and calls ``SSLHandshake(_:)`` again to go on (or ``SSLClose(_:)``). The other options are accepted and have no
/// effect here.
@discardableResult
public func SSLSetSessionOption(_ context: SSLContext, _ option: SSLSessionOption, _ value: Bool) -> OSStatus {
    context.setOption(option, value)
}

/// TLS 1.2 (the default) or 1.3; older versions and DTLS are refused with `errSSLIllegalParam`.
@discardableResult
public func SSLSetProtocolVersionMin(_ context: SSLContext, _ minVersion: SSLProtocol) -> OSStatus {
    context.setVersion(minVersion, minimum: true)
}

/// TLS 1.2 or 1.3 (the default, also as `tlsProtocolMaxSupported`); older versions are refused.
@discardableResult
public func SSLSetProtocolVersionMax(_ context: SSLContext, _ maxVersion: SSLProtocol) -> OSStatus {
    context.setVersion(maxVersion, minimum: false)
}

/// `sslProtocolUnknown` when every version was disabled (``SSLSetProtocolVersionEnabled(_:_:_:)``), as Apple's.
@discardableResult
public func SSLGetProtocolVersionMin(_ context: SSLContext, _ minVersion: UnsafeMutablePointer<SSLProtocol>) -> OSStatus {
    minVersion.pointee = context.versions.map { $0.minimum == .tls13 ? .tlsProtocol13 : .tlsProtocol12 } ?? .sslProtocolUnknown
    return errSecSuccess
}

/// `sslProtocolUnknown` when every version was disabled (``SSLSetProtocolVersionEnabled(_:_:_:)``), as Apple's.
@discardableResult
public func SSLGetProtocolVersionMax(_ context: SSLContext, _ maxVersion: UnsafeMutablePointer<SSLProtocol>) -> OSStatus {
    maxVersion.pointee = context.versions.map { $0.maximum == .tls13 ? .tlsProtocol13 : .tlsProtocol12 } ?? .sslProtocolUnknown
    return errSecSuccess
}

/// The protocols offered (a client) or accepted, first preferred (a server): an array of strings.
@discardableResult
public func SSLSetALPNProtocols(_ context: SSLContext, _ protocols: CFArray) -> OSStatus {
    var names: [String] = []
    for element in protocols {
        guard let name = stringValue(element) else { return errSecParam }
        names.append(name)
    }
    return context.setApplicationProtocols(names)
}

/// The protocol the handshake chose, as a one-element array (empty when none was). As Apple's, the array is
/// returned retained (`*protocols` should be nil on input): take it with `takeRetainedValue()`.
@discardableResult
public func SSLCopyALPNProtocols(_ context: SSLContext, _ protocols: UnsafeMutablePointer<Unmanaged<CFArray>?>) -> OSStatus {
    let array = NSArray(array: context.selectedApplicationProtocol.map { [NSString(string: $0)] } ?? [])
    protocols.pointee = Unmanaged.passRetained(array)
    return errSecSuccess
}

/// A server's request for a client certificate: never (the default), always (the handshake fails without one), or
/// try.
@discardableResult
public func SSLSetClientSideAuthenticate(_ context: SSLContext, _ auth: SSLAuthenticate) -> OSStatus {
    context.setClientAuthentication(auth)
}

/// Runs the handshake: `noErr` when done, `errSSLWouldBlock` when the I/O functions would block (call again),
/// `errSSLPeerAuthCompleted` at a break on authentication, else the failure's status.
@discardableResult
public func SSLHandshake(_ context: SSLContext) -> OSStatus { context.handshake() }

/// The peer's certificates as a trust object with the SSL policy for the peer domain name (and no evaluation yet):
/// nil before they arrive.
@discardableResult
public func SSLCopyPeerTrust(_ context: SSLContext, _ trust: UnsafeMutablePointer<SecTrust?>) -> OSStatus {
    trust.pointee = context.copyPeerTrust()
    return errSecSuccess
}

@discardableResult
public func SSLGetSessionState(_ context: SSLContext, _ state: UnsafeMutablePointer<SSLSessionState>) -> OSStatus {
    state.pointee = context.sessionState
    return errSecSuccess
}

/// Reads decrypted bytes: what one record holds, up to `dataLength` (`*processed` says how many). `errSSLWouldBlock`
/// with none, `errSSLClosedGraceful` after the peer's close_notify, `errSSLClosedNoNotify` when it went without.
@discardableResult
public func SSLRead(
    _ context: SSLContext, _ data: UnsafeMutableRawPointer, _ dataLength: Int, _ processed: UnsafeMutablePointer<Int>
) -> OSStatus {
    var count = 0
    let status = context.read(UnsafeMutableRawBufferPointer(start: data, count: max(dataLength, 0)), &count)
    processed.pointee = count
    return status
}

/// Writes `dataLength` bytes; `*processed` says how many were taken (fewer with `errSSLWouldBlock`: call again with
/// the rest).
@discardableResult
public func SSLWrite(
    _ context: SSLContext, _ data: UnsafeRawPointer?, _ dataLength: Int, _ processed: UnsafeMutablePointer<Int>
) -> OSStatus {
    var count = 0
    let status = context.write(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : max(dataLength, 0)), &count)
    processed.pointee = count
    return status
}

/// Sends close_notify and ends the session.
@discardableResult
public func SSLClose(_ context: SSLContext) -> OSStatus { context.close() }

@discardableResult
public func SSLGetBufferedReadSize(_ context: SSLContext, _ bufferSize: UnsafeMutablePointer<Int>) -> OSStatus {
    bufferSize.pointee = context.bufferedReadSize
    return errSecSuccess
}

@discardableResult
public func SSLGetNegotiatedProtocolVersion(_ context: SSLContext, _ protocol: UnsafeMutablePointer<SSLProtocol>) -> OSStatus {
    `protocol`.pointee = context.negotiatedVersion
    return errSecSuccess
}

/// The IANA number of the negotiated cipher suite; `errSecBadReq` before the handshake completes.
@discardableResult
public func SSLGetNegotiatedCipher(_ context: SSLContext, _ cipherSuite: UnsafeMutablePointer<SSLCipherSuite>) -> OSStatus {
    guard let suite = context.negotiatedCipher else { return errSecBadReq }
    cipherSuite.pointee = suite
    return errSecSuccess
}
