import SecurityBase
import CryptoContract

/// A cipher stream that picks its backend at the first call, by that call's size (a stream's state cannot
/// move between backends afterwards). Until then it only keeps the key (wiped on release) and the IV.
final class DispatchCipherStream: CipherStream {
    let spec: CipherSpec
    let direction: CipherDirection
    private let dispatcher: Dispatcher
    private let key: SecretBytes
    private var iv: [UInt8]?
    private var inner: (any CipherStream)?
    private var accounting: CipherStreamAccounting

    init(_ dispatcher: Dispatcher, _ direction: CipherDirection, _ spec: CipherSpec, key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer?) {
        self.dispatcher = dispatcher
        self.direction = direction
        self.spec = spec
        self.key = SecretBytes(copying: key)
        self.iv = iv.map { Array($0) }
        accounting = CipherStreamAccounting(spec: spec, direction: direction)
    }

    func outputLength(forInputCount inputCount: Int, final: Bool) -> Int {
        inner?.outputLength(forInputCount: inputCount, final: final)
            ?? accounting.outputLength(forInputCount: inputCount, final: final)
    }

    func update(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws -> Int {
        try (inner ?? choose(size: input.count)).update(input, into: output)
    }

    func finish(into output: UnsafeMutableRawBufferPointer) throws -> Int {
        try (inner ?? choose(size: 0)).finish(into: output)
    }

    func reset(iv newIV: UnsafeRawBufferPointer?) throws {
        if let inner { return try inner.reset(iv: newIV) }
        if let newIV {
            try spec.validate(keyCount: key.count, ivCount: newIV.count)
            iv = Array(newIV)
        }
    }

    private func choose(size: Int) throws -> any CipherStream {
        let make = { (backend: any CryptoBackend) throws -> any CipherStream in
            try self.key.withUnsafeBytes { key in
                try self.iv.withUnsafeBufferOrNil { try backend.makeCipherStream(self.direction, self.spec, key: key, iv: $0) }
            }
        }
        let stream = try dispatcher.route(
            Route.cipher(spec.algorithm, spec.mode, direction), size: size,
            offload: make, software: { try make(dispatcher.software) })
        inner = stream
        return stream
    }
}

/// A digest or HMAC stream that picks its backend at its first update, by that update's size.
final class DispatchDigestStream: DigestStream {
    let algorithm: DigestAlgorithm
    private let dispatcher: Dispatcher
    /// The HMAC key, `nil` for a plain digest.
    private let key: SecretBytes?
    private var inner: (any DigestStream)?

    init(_ dispatcher: Dispatcher, _ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer?) {
        self.dispatcher = dispatcher
        self.algorithm = algorithm
        self.key = key.map(SecretBytes.init(copying:))
    }

    func update(_ input: UnsafeRawBufferPointer) throws {
        try (inner ?? choose(size: input.count)).update(input)
    }

    func finish(into output: UnsafeMutableRawBufferPointer) throws {
        try (inner ?? choose(size: 0)).finish(into: output)
    }

    func reset() throws { try inner?.reset() }

    private func choose(size: Int) throws -> any DigestStream {
        let stream: any DigestStream
        if let key {
            let make = { (backend: any CryptoBackend) in try key.withUnsafeBytes { try backend.makeHMACStream(self.algorithm, key: $0) } }
            stream = try dispatcher.route(
                Route.hmac(algorithm), size: size, offload: make, software: { try make(dispatcher.software) })
        } else {
            stream = try dispatcher.route(
                Route.digest(algorithm), size: size,
                offload: { try $0.makeDigestStream(algorithm) },
                software: { try dispatcher.software.makeDigestStream(algorithm) })
        }
        inner = stream
        return stream
    }
}
