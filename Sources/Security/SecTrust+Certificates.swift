package import Certificates

extension SecTrust {
    /// The certificates the trust was created with, leaf first, as given (not the evaluated chain): what the
    /// package's certificate manager validates against its own anchors.
    package var givenCertificates: [Certificate] { settings.certificates.map(\.certificate) }
}
