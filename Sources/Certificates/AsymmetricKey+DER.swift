public import Foundation
internal import COpenSSL

extension AsymmetricKey {
    /// The public key as an X.509 SubjectPublicKeyInfo (DER), as `openssl pkey -pubout -outform DER` writes it.
    public func subjectPublicKeyInfo() throws -> Data {
        try encoded("SubjectPublicKeyInfo") { i2d_PUBKEY(pkey, $0) }
    }

    /// The private key in OpenSSL's traditional DER (PKCS#1 `RSAPrivateKey`, SEC 1 `ECPrivateKey`), as
    /// `openssl rsa`/`openssl ec -outform DER` write it.
    /// - Throws: ``KeyError`` `.unsupportedAlgorithm` for a public key or one held by another process.
    public func traditionalPrivateKey() throws -> Data {
        guard isPrivate, !isHeldElsewhere else { throw KeyError(.unsupportedAlgorithm, "only a private key held here can be written out") }
        return try encoded("private key") { i2d_PrivateKey(pkey, $0) }
    }

    /// The DER an OpenSSL `i2d_…` call writes: its length first (a nil output), then the bytes.
    private func encoded(_ what: String, _ write: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) throws -> Data {
        ERR_clear_error()
        let length = write(nil)
        guard length > 0 else { throw KeyError.openSSL(.backendFailure, "encoding the \(what)") }
        var bytes = Data(count: Int(length))
        let written = bytes.withUnsafeMutableBytes { raw -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)  // !: length > 0
            return write(&cursor)
        }
        guard written == length else { throw KeyError.openSSL(.backendFailure, "encoding the \(what)") }
        return bytes
    }
}
