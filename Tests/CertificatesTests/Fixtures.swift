import Foundation

/// Where test fixtures come from: the pinned cryptography-vectors package (`SECURITYSERVICES_VECTORS`).
enum CertificateFixtures {
    static var vectors: URL? {
        ProcessInfo.processInfo.environment["SECURITYSERVICES_VECTORS"].map { URL(fileURLWithPath: $0) }
    }
}
