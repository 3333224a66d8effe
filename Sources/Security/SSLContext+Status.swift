import TLS

extension SSLContext {
    /// Apple's status for an engine failure.
    func status(of failure: TLSEngine.Failure) -> OSStatus {
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
