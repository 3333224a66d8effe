public import Certificates
public import Trust

extension SecTrust: PresentedCertificates {
    /// The certificates the trust was created with, leaf first, as given (not the evaluated chain): what the
    /// package's certificate manager validates against its own anchors.
    public var presentedCertificates: [Certificate] { settings.certificates.map(\.certificate) }
}
