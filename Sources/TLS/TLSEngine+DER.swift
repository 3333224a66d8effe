internal import COpenSSL

extension TLSEngine {
    /// Whether `der` is one DER-encoded X.509 Name (nothing after it).
    public static func isDistinguishedName(_ der: [UInt8]) -> Bool {
        guard let name = x509Name(der) else { return false }
        X509_NAME_free(name)
        return true
    }

    /// Whether `der` is DER-encoded Diffie-Hellman parameters libssl can use (PKCS #3 DHParameter).
    public static func isDiffieHellmanParameters(_ der: [UInt8]) -> Bool {
        guard let key = diffieHellmanKey(der) else { return false }
        EVP_PKEY_free(key)
        return true
    }

    static func x509Name(_ der: [UInt8]) -> OpaquePointer? {
        der.withUnsafeBufferPointer { bytes -> OpaquePointer? in
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            guard let name = d2i_X509_NAME(nil, &cursor, bytes.count) else { return nil }
            // Trailing bytes: not one name.
            guard cursor == base + bytes.count else {
                X509_NAME_free(name)
                return nil
            }
            return name
        }
    }

    static func diffieHellmanKey(_ der: [UInt8]) -> OpaquePointer? {
        defer { ERR_clear_error() }
        return der.withUnsafeBufferPointer { bytes -> OpaquePointer? in
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            guard let key = d2i_KeyParams(EVP_PKEY_DH, nil, &cursor, bytes.count) else { return nil }
            guard cursor == base + bytes.count else {
                EVP_PKEY_free(key)
                return nil
            }
            return key
        }
    }

    /// The DER encoding of an X509_NAME.
    static func encoded(name: OpaquePointer) -> [UInt8]? {
        let length = i2d_X509_NAME(name, nil)
        guard length > 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        let written = bytes.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_X509_NAME(name, &cursor)
        }
        return written == length ? bytes : nil
    }
}
