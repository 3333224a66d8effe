public import SecurityBase

/// A TLS engine that cannot be set up as asked. Its description is the reason alone (the engine's callers put it in
/// their own errors).
public struct TLSEngineError: CodedError {
    public typealias Code = ErrorCode<TLSEngineError>

    public let code: Code
    public let reason: String
    public let location: ErrorLocation

    init(_ reason: String, file: StaticString = #fileID, line: UInt = #line) {
        code = .unusableSettings
        self.reason = reason
        location = ErrorLocation(fileID: file, line: line)
    }

    public var description: String { reason }
}

extension ErrorCode where Domain == TLSEngineError {
    /// The settings cannot be made into a connection (versions, suites, ALPN names, CA names), or libssl failed.
    public static let unusableSettings = Self(name: "unusableSettings")
}
