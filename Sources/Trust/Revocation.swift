internal import COpenSSL
internal import COpenSSLShims
public import Foundation
import Certificates
import NetworkFetch
import Synchronization

/// How an evaluation checks revocation (Apple's `SecPolicyCreateRevocation` flags, as a value). OCSP is
/// preferred with CRLs as the fallback; each certificate below the anchor is checked.
///
/// Soft-fail by default: a certificate whose status cannot be learned (no responder, no CRL, a timeout, an answer
/// that is stale or unverifiable) passes; with ``requirePositiveResponse`` it fails, recoverably
/// (``TrustFailureReason/revocationUnavailable``). A revoked certificate is always fatal
/// (``TrustFailureReason/revoked``).
public struct RevocationPolicy: Sendable, Hashable {
    /// Which sources to ask.
    public struct Methods: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// OCSP: the stapled response, then the certificate's AIA responder over HTTP.
        public static let ocsp = Methods(rawValue: 1)
        /// CRLs: the certificate's distribution point over HTTP (cached until its nextUpdate).
        public static let crl = Methods(rawValue: 2)
    }

    public var methods: Methods
    /// Ask the CRL first, OCSP second (`kSecRevocationPreferCRL`).
    public var preferCRL: Bool
    /// Fail when no source gives an answer (`kSecRevocationRequirePositiveResponse`): hard-fail.
    public var requirePositiveResponse: Bool
    /// Whether the network may be used (`SecTrustSetNetworkFetchAllowed`); without it only stapled responses
    /// and cached CRLs count.
    public var networkAccessAllowed: Bool
    /// How long one fetch may take before it counts as no answer.
    public var timeout: Duration
    /// OCSP responses stapled by the peer (`SecTrustSetOCSPResponse`), DER; used for the leaf.
    public var stapledOCSPResponses: [Data]

    public init(
        methods: Methods = [.ocsp, .crl], preferCRL: Bool = false, requirePositiveResponse: Bool = false,
        networkAccessAllowed: Bool = true, timeout: Duration = .seconds(5), stapledOCSPResponses: [Data] = []
    ) {
        self.methods = methods
        self.preferCRL = preferCRL
        self.requirePositiveResponse = requirePositiveResponse
        self.networkAccessAllowed = networkAccessAllowed
        self.timeout = timeout
        self.stapledOCSPResponses = stapledOCSPResponses
    }
}

/// When an OCSP answer or a CRL is current: `OCSP_check_validity`'s rule for thisUpdate and nextUpdate, with the
/// maximum age applied only to an answer without nextUpdate; written here (it was C) so that the decision is the
/// evaluator's and testable on its own.
enum RevocationFreshness {
    /// The clock skew allowed both ways, in seconds.
    static let skew = 300
    /// How old an OCSP answer without nextUpdate may be: RFC 5019 reads a missing nextUpdate as "newer information
    /// is always available", so such an answer is good for a day at most, not forever.
    static let ocspMaximumAgeWithoutNextUpdate = 86_400

    /// Whether an answer issued at `thisUpdate` (and current until `nextUpdate`) may be used at `time` (all in
    /// seconds since 1970): issued no later than `time` + skew, and either `nextUpdate` later than `time` − skew,
    /// or, without one, issued later than `time` − `maximumAgeWithoutNextUpdate` − skew (never, when that is nil).
    static func isFresh(thisUpdate: Int?, nextUpdate: Int?, at time: Int, maximumAgeWithoutNextUpdate: Int?) -> Bool {
        guard let thisUpdate, thisUpdate <= time + skew else { return false }
        if let nextUpdate { return nextUpdate > time - skew }
        guard let maximumAge = maximumAgeWithoutNextUpdate else { return false }
        return thisUpdate > time - maximumAge - skew
    }
}

/// What revocation checking learned about one certificate.
enum RevocationStatus: Equatable {
    case good, revoked, unknown
}

/// Checks a built path's certificates against OCSP and CRLs. The fetched CRLs are cached for the process, by
/// URL, until their nextUpdate; the fetched OCSP answers per certificate while they are fresh (``OCSPCache``).
enum RevocationChecker {
    /// Adds `.revoked` (or, when a positive response is required and none came, `.revocationUnavailable`) to the
    /// statuses of `path` (leaf first, anchor last).
    static func check(
        _ path: [Certificate], policy: RevocationPolicy, network: EvaluationNetwork, time: Int,
        into statuses: inout [TrustResult.CertificateStatus]
    ) async throws(CancellationError) {
        guard path.count >= 2 else { return }
        for index in 0..<(path.count - 1) {
            let status = try await self.status(
                of: path[index], issuer: path[index + 1], anchor: path[path.count - 1], isLeaf: index == 0,
                policy: policy, network: network, time: time)
            switch status {
            case .revoked: statuses[index].add(.revoked)
            case .unknown where policy.requirePositiveResponse: statuses[index].add(.revocationUnavailable)
            default: break
            }
        }
    }

    static func status(
        of certificate: Certificate, issuer: Certificate, anchor: Certificate, isLeaf: Bool, policy: RevocationPolicy,
        network: EvaluationNetwork, time: Int
    ) async throws(CancellationError) -> RevocationStatus {
        var order: [RevocationPolicy.Methods] = policy.preferCRL ? [.crl, .ocsp] : [.ocsp, .crl]
        order.removeAll { !policy.methods.contains($0) }
        for method in order {
            let answer = method == .ocsp
                ? try await ocsp(certificate, issuer, anchor, isLeaf: isLeaf, policy: policy, network: network, time: time)
                : try await crl(certificate, issuer, policy: policy, network: network, time: time)
            if answer != .unknown { return answer }
        }
        return .unknown
    }

    /// What the OCSP step knows before any fetch: an answer (stapled or kept), or the request to send.
    private enum OCSPStart {
        case answered(RevocationStatus)
        case ask(url: String, request: OCSPRequest, body: [UInt8])
    }

    private static func ocsp(
        _ certificate: Certificate, _ issuer: Certificate, _ anchor: Certificate, isLeaf: Bool,
        policy: RevocationPolicy, network: EvaluationNetwork, time: Int
    ) async throws(CancellationError) -> RevocationStatus {
        let key = OCSPCache.Key(certificate, issuer, anchor)
        let start = certificate.withUnsafeX509 { x509 -> OCSPStart in
            issuer.withUnsafeX509 { issuerX509 in
                anchor.withUnsafeX509 { anchorX509 in
                    if isLeaf {
                        for stapled in policy.stapledOCSPResponses {
                            let answer = OCSPAnswers.check(
                                [UInt8](stapled), certificate: x509, issuer: issuerX509, anchor: anchorX509, request: nil, time: time)
                            if let status = answer.decided(at: time, maximumAgeWithoutNextUpdate: RevocationFreshness.ocspMaximumAgeWithoutNextUpdate) {
                                return .answered(status)
                            }
                        }
                    }
                    // A fetched answer kept from an earlier evaluation, while it is fresh at this one's time.
                    if let kept = OCSPCache.shared.answer(for: key, at: time) { return .answered(kept) }
                    guard policy.networkAccessAllowed, let url = url(of: x509, kind: COPENSSL_REVOCATION_URL_OCSP),
                        let request = OCSPRequest(for: x509, issuer: issuerX509)
                    else { return .answered(.unknown) }
                    return .ask(url: url, request: request, body: request.der)
                }
            }
        }
        guard case .ask(let url, let request, let body) = start else {
            if case .answered(let status) = start { return status }
            return .unknown
        }
        // The request (with its nonce) was made in C, the exchange goes through the fetcher, the answer is checked in C.
        guard
            let answer = try await network.fetch(
                FetchRequest(
                    url: url, body: body, contentType: "application/ocsp-request", timeout: policy.timeout,
                    maximumLength: maximumOCSPResponse)),
            !answer.isEmpty
        else { return .unknown }
        let checked = certificate.withUnsafeX509 { x509 in
            issuer.withUnsafeX509 { issuerX509 in
                anchor.withUnsafeX509 { anchorX509 in
                    OCSPAnswers.check(answer, certificate: x509, issuer: issuerX509, anchor: anchorX509, request: request.pointer, time: time)
                }
            }
        }
        guard let decided = checked.decided(at: time, maximumAgeWithoutNextUpdate: RevocationFreshness.ocspMaximumAgeWithoutNextUpdate)
        else { return .unknown }
        OCSPCache.shared.keep(OCSPCache.Answer(status: decided, thisUpdate: checked.thisUpdate, nextUpdate: checked.nextUpdate), for: key)
        return decided
    }

    private static func crl(
        _ certificate: Certificate, _ issuer: Certificate, policy: RevocationPolicy, network: EvaluationNetwork,
        time: Int
    ) async throws(CancellationError) -> RevocationStatus {
        guard let url = certificate.withUnsafeX509({ url(of: $0, kind: COPENSSL_REVOCATION_URL_CRL) }) else { return .unknown }
        guard
            let crl = try await CRLCache.shared.crl(
                at: url, time: time, fetching: policy.networkAccessAllowed ? (network, policy.timeout) : nil,
                verified: { crl in
                    crl.hasCRLNumber && issuer.withUnsafeX509 { issuerX509 in crl.withUnsafeCRL { CRLAnswers.isSigned($0, by: issuerX509) } }
                })
        else { return .unknown }
        // A CRL without the CRLNumber extension is not trusted (RFC 5280 5.2.3), fetched as given.
        guard crl.hasCRLNumber else { return .unknown }
        let answer = certificate.withUnsafeX509 { x509 in
            issuer.withUnsafeX509 { issuerX509 in crl.withUnsafeCRL { CRLAnswers.check($0, certificate: x509, issuer: issuerX509) } }
        }
        // A CRL must carry nextUpdate (RFC 5280 5.1.2.5): without one it is never fresh.
        return answer.decided(at: time, maximumAgeWithoutNextUpdate: nil) ?? .unknown
    }

    /// The certificate's first http:// URL of `kind` (`COPENSSL_REVOCATION_URL_OCSP`, `_CRL`, `_CA_ISSUERS`).
    static func url(of x509: OpaquePointer, kind: Int) -> String? {
        var buffer = [CChar](repeating: 0, count: 2048)
        guard copenssl_revocation_url(x509, Int32(kind), &buffer, buffer.count) == 1 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The longest OCSP response read (as OpenSSL's own client bounded it).
    static let maximumOCSPResponse = 100 * 1024
    /// The longest CRL read (OpenSSL's OSSL_HTTP_DEFAULT_MAX_CRL_LEN, as X509_CRL_load_http).
    static let maximumCRL = 32 * 1024 * 1024
}

/// An OCSP request made in C (with its nonce), kept to check the answer against; freed with this value.
final class OCSPRequest {
    let pointer: OpaquePointer
    /// The request's DER, the body sent.
    let der: [UInt8]

    init?(for certificate: OpaquePointer, issuer: OpaquePointer) {
        var bytes: UnsafeMutablePointer<UInt8>?
        var length: Int32 = 0
        guard let request = copenssl_revocation_ocsp_request(certificate, issuer, &bytes, &length) else { return nil }
        guard let bytes else {
            OCSP_REQUEST_free(request)
            return nil
        }
        pointer = request
        der = Array(UnsafeBufferPointer(start: bytes, count: Int(length)))
        CRYPTO_free(bytes, #file, #line)
    }

    deinit { OCSP_REQUEST_free(pointer) }
}

/// The CRLs fetched over HTTP, kept by URL until their nextUpdate (a CRL without one is fetched again next time).
///
/// Only a CRL its issuer's key verifies is kept (a forged or foreign download is not), and the cache is bounded:
/// at most ``maximumEntries`` CRLs costing at most ``maximumBytes`` of memory in all (their parsed form, several
/// times their DER: ``CertificateRevocationList/estimatedMemoryCost``), the least recently used going first, so
/// hostile certificates pointing at large CRLs cannot grow a process without end.
final class CRLCache: Sendable {
    static let shared = CRLCache()
    static let maximumEntries = 64
    static let maximumBytes = 32 << 20

    private struct Entry {
        let crl: CertificateRevocationList
        let cost: Int
        let nextUpdate: Int
        var lastUsed: UInt64
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var bytes = 0
        var clock: UInt64 = 0
    }

    private let state = Mutex(State())

    /// The CRL at `url`: the cached one while `time` is before its nextUpdate, else a fresh download when
    /// `fetching` gives a fetcher and a timeout, kept only when `verified` says its issuer signed it.
    func crl(
        at url: String, time: Int, fetching: (network: EvaluationNetwork, timeout: Duration)?,
        verified: (CertificateRevocationList) -> Bool
    ) async throws(CancellationError) -> CertificateRevocationList? {
        let cached = state.withLock { state -> CertificateRevocationList? in
            guard var entry = state.entries[url], time < entry.nextUpdate else { return nil }
            state.clock += 1
            entry.lastUsed = state.clock
            state.entries[url] = entry
            return entry.crl
        }
        if let cached { return cached }
        guard let fetching,
            let bytes = try await fetching.network.fetch(
                FetchRequest(url: url, timeout: fetching.timeout, maximumLength: RevocationChecker.maximumCRL)),
            let fetched = bytes.withUnsafeBufferPointer({ copenssl_revocation_crl_from_der($0.baseAddress, $0.count) })
        else { return nil }
        let crl = CertificateRevocationList(takingOwnership: fetched)
        let next = CRLAnswers.validity(fetched).nextUpdate ?? 0
        let cost = crl.estimatedMemoryCost
        if next > 0, cost <= Self.maximumBytes, verified(crl) {
            state.withLock { state in
                if let old = state.entries.removeValue(forKey: url) { state.bytes -= old.cost }
                while !state.entries.isEmpty, state.entries.count >= Self.maximumEntries || state.bytes + cost > Self.maximumBytes {
                    // min: entries is not empty (the loop's condition).
                    let oldest = state.entries.min { $0.value.lastUsed < $1.value.lastUsed }!
                    state.entries.removeValue(forKey: oldest.key)
                    state.bytes -= oldest.value.cost
                }
                state.clock += 1
                state.entries[url] = Entry(crl: crl, cost: cost, nextUpdate: Int(next), lastUsed: state.clock)
                state.bytes += cost
            }
        }
        return crl
    }

    /// How many CRLs are cached, and the memory they cost by ``CertificateRevocationList/estimatedMemoryCost`` (tests).
    var usage: (entries: Int, bytes: Int) { state.withLock { ($0.entries.count, $0.bytes) } }

    /// Whether a CRL from `url` is cached (tests).
    func contains(_ url: String) -> Bool { state.withLock { $0.entries[url] != nil } }

    /// Forgets every cached CRL (tests).
    func removeAll() { state.withLock { $0 = State() } }
}
