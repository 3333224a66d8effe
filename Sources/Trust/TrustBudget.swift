/// The work an evaluation may do, so that hostile inputs (dozens of same-subject issuers, loops of cross-signed
/// CAs) end quickly. Running out is a recoverable failure (`TrustFailureReason.budgetExhausted`), never a hang.
public struct TrustBudget: Hashable, Sendable {
    /// The most certificates in a path, leaf and anchor included.
    public var maxPathLength: Int
    /// The most candidate issuers tried for one certificate.
    public var maxCandidatesPerStep: Int
    /// The most signature verifications: the path builder's (does this candidate's key verify the certificate?)
    /// plus those of each candidate path handed to OpenSSL (one per certificate below the anchor).
    public var maxSignatureChecks: Int
    /// The most time the evaluation's fetches (OCSP, CRLs, caIssuers) take in all, each also within its own
    /// timeout; a fetch that would start later gets no answer, read as the revocation policy says (nil: each fetch
    /// its own timeout only).
    public var networkTime: Duration?

    /// - Parameters:
    ///   - maxPathLength: the most certificates in a path (default 10).
    ///   - maxCandidatesPerStep: the most issuers tried per certificate (default 16).
    ///   - maxSignatureChecks: the most signature verifications in all (default 128).
    ///   - networkTime: the most time all of an evaluation's fetches take (default 30 seconds).
    public init(
        maxPathLength: Int = 10, maxCandidatesPerStep: Int = 16, maxSignatureChecks: Int = 128,
        networkTime: Duration? = .seconds(30)
    ) {
        self.maxPathLength = maxPathLength
        self.maxCandidatesPerStep = maxCandidatesPerStep
        self.maxSignatureChecks = maxSignatureChecks
        self.networkTime = networkTime
    }

    /// The defaults.
    public static let standard = TrustBudget()

    func validate() throws {
        guard maxPathLength > 0, maxCandidatesPerStep > 0, maxSignatureChecks > 0, networkTime.map({ $0 > .zero }) ?? true else {
            throw TrustError(
                .invalidBudget,
                "limits must be positive (path \(maxPathLength), candidates \(maxCandidatesPerStep), "
                    + "signatures \(maxSignatureChecks), network time \(networkTime.map { "\($0)" } ?? "none"))")
        }
    }
}

extension TrustResult {
    /// The work an evaluation did (what the budget bounds).
    public struct Work: Hashable, Sendable {
        /// Signature verifications, counted as the budget counts them.
        public internal(set) var signatureChecks = 0
        /// Candidate issuers looked at.
        public internal(set) var candidatesConsidered = 0
        /// Candidate paths handed to `X509_verify_cert`.
        public internal(set) var pathsValidated = 0
    }
}
