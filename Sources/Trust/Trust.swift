public import Certificates

// The Trust module: "should I trust this certificate for this action?", answered as the phone's SecTrust does.
//
// `TrustEvaluator` builds candidate paths itself (a bounded depth-first search over the given intermediates and
// anchors that backtracks across alternative issuers) and has each candidate validated by OpenSSL's
// `X509_verify_cert` restricted to exactly that path; validity periods and hostnames (RFC 6125, Apple's
// SecDNSMatch) are checked here. The result is a value: trusted or not, the chain, and per-certificate reasons
// classified recoverable or fatal as Apple does.

/// Something that holds the certificates a peer presented, leaf first: what a validation that applies its own
/// anchors and policy evaluates. The `Security` module's `SecTrust` is one, so layers below it (the certificate
/// manager) can take a `SecTrust` without depending on the Apple adapter.
public protocol PresentedCertificates: Sendable {
    /// The certificates as presented, leaf first (not an evaluated chain).
    var presentedCertificates: [Certificate] { get }
}
