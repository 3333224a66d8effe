internal import COpenSSL
public import Certificates

/// A TLS session a client may resume: libssl's session (its secrets stay in OpenSSL's memory, which cleanses the
/// master key when the last reference goes) and the certificates the server presented when it was made (a resumed
/// handshake exchanges none). Kept by reference: serializing it would encode and, on use, parse the server's
/// certificate again (~77 µs with OpenSSL 3.0).
public final class TLSSession: @unchecked Sendable {
    // @unchecked: the SSL_SESSION is not changed after libssl hands it over; SSL_set_session only takes references.
    private let session: OpaquePointer
    public let peerCertificates: [Certificate]

    /// Adopts a reference libssl handed over (its new-session callback returning 1).
    init?(adopting session: OpaquePointer, peerCertificates: [Certificate]) {
        guard SSL_SESSION_is_resumable(session) == 1 else {
            SSL_SESSION_free(session)
            return nil
        }
        self.session = session
        self.peerCertificates = peerCertificates
    }

    deinit { SSL_SESSION_free(session) }

    /// Offers the session on `ssl` (SSL_set_session takes its own reference).
    func use(in ssl: OpaquePointer) -> Bool { SSL_set_session(ssl, session) == 1 }
}
