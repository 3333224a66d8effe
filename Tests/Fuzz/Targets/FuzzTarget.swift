public import Foundation

/// One fuzz target: a name, what it feeds, and the body libFuzzer calls with each input. A body returns
/// normally for any input, accepted or refused; it traps (`preconditionFailure`) only when an invariant the API
/// promises is broken (a chunked cipher disagreeing with the one-shot, a parsed certificate not giving its bytes
/// back), so that libFuzzer reports it as a crash with the input that caused it.
public struct FuzzTarget: Sendable {
    public let name: String
    public let summary: String
    public let run: @Sendable (Data) -> Void
    /// Inputs that start the corpus, made here from the project's own encoders (the vectors add more files).
    public let seeds: @Sendable () -> [Data]

    public init(name: String, summary: String, seeds: @escaping @Sendable () -> [Data] = { [] }, run: @escaping @Sendable (Data) -> Void) {
        self.name = name
        self.summary = summary
        self.seeds = seeds
        self.run = run
    }

    /// Every target, in the order `make fuzz` runs them.
    public static let all: [FuzzTarget] = [
        .certificate, .pkcs12, .key, .crl, .keychainWire, .itemImport, .cryptor, .trustSettings, .dispatchProfile, .keychainBackup,
        .ocsp, .scep, .trustChain, .secItemQuery, .secureTransport,
    ]

    public static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }
}

/// Reads little pieces off the front of a fuzzer's input: choices first, the rest as payload.
struct FuzzInput {
    private var bytes: Data

    init(_ data: Data) { bytes = data }

    var isEmpty: Bool { bytes.isEmpty }

    mutating func byte() -> UInt8 {
        guard let first = bytes.first else { return 0 }
        bytes = bytes.dropFirst()
        return first
    }

    mutating func take(_ count: Int) -> Data {
        let taken = bytes.prefix(count)
        bytes = bytes.dropFirst(taken.count)
        return Data(taken)
    }

    mutating func rest() -> Data {
        defer { bytes = Data() }
        return Data(bytes)
    }
}
