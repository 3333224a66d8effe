// The Trust module: "should I trust this certificate for this action?", answered as the phone's SecTrust does.
//
// `TrustEvaluator` builds candidate paths itself (a bounded depth-first search over the given intermediates and
// anchors that backtracks across alternative issuers) and has each candidate validated by OpenSSL's
// `X509_verify_cert` restricted to exactly that path; validity periods and hostnames (RFC 6125, Apple's
// SecDNSMatch) are checked here. The result is a value: trusted or not, the chain, and per-certificate reasons
// classified recoverable or fatal as Apple does.
