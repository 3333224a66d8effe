/// A TLS engine that cannot be set up as asked.
public struct TLSEngineError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
