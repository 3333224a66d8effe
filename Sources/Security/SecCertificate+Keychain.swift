import Foundation
import Keychain

// The certificate side of ItemReferences (filled in with SecCertificate).
extension ItemReferences {
    /// A SecCertificate for a certificate item (its data is the DER), or nil when it does not parse.
    static func certificateReference(_ item: KeychainItem) -> CFTypeRef? { nil }

    /// A SecIdentity for an identity item (the certificate's DER and the private key's data).
    static func identityReference(_ item: KeychainItem) -> CFTypeRef? { nil }

    /// What a SecCertificate (or SecIdentity) stands for, or nil for any other value.
    static func certificateContents(_ value: Any) throws -> Contents? { nil }
}
