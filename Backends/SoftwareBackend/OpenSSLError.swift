internal import COpenSSL
import CryptoContract

extension CryptoError {
    /// A backend failure carrying OpenSSL's first queued error, and clears the queue.
    /// OpenSSL's error strings name the failing routine, never data or keys.
    static func openSSL(_ what: String) -> CryptoError {
        let code = ERR_get_error()
        var text = [CChar](repeating: 0, count: 256)
        if code != 0 { ERR_error_string_n(code, &text, text.count) }
        ERR_clear_error()
        let detail = code == 0 ? "no OpenSSL error queued" : String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return CryptoError(.backendFailure, "\(what) failed: \(detail)", nativeCode: Int(code))
    }
}
