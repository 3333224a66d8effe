public import Foundation

/// PEM armour (RFC 7468): base64 in 64-column lines between `-----BEGIN label-----` and `-----END label-----`,
/// as OpenSSL writes it.
public enum PEM {
    /// `der` as one PEM block labelled `label` ("CERTIFICATE", "CERTIFICATE REQUEST", "PKCS12", ...).
    public static func encode(_ der: Data, label: String) -> String {
        let body = der.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN \(label)-----\n\(body)\n-----END \(label)-----\n"
    }
}

extension Certificate {
    /// The certificate as one PEM `CERTIFICATE` block.
    public var pemEncoded: String { PEM.encode(derEncoded, label: "CERTIFICATE") }
}
