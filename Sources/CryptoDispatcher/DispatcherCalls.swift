public import CryptoContract
import CDispatcherThreadState

/// The calls themselves: validated once, then the software-only path (one compare, the software backend's body
/// inlined) or the routed path (``Dispatcher/routeAway(_:size:_:software:)``), one per kind of call.
extension Dispatcher {
    public func supports(_ operation: CryptoOperation) -> Bool {
        software.supports(operation) || backends.contains { $0.supports(operation) }
    }

    public func crypt(
        _ direction: CipherDirection, _ spec: CipherSpec, key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer?,
        input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws -> Int {
        // Validated first, for every backend (each would refuse the same call the same way). `input`'s size is read
        // only after this call: the caller stored it on the stack 16 bytes at a time, and reading half of such a
        // store at once waits for it to reach the cache.
        try spec.validate(keyCount: key.count, ivCount: iv?.count)
        // The software backend's body inlined, so that this call's arguments are not passed on again. Counted after
        // the call, which can still fail; the software backend never calls a dispatcher, so the thread's last count
        // block is still this dispatcher's then.
        if CallCounts.isLast(softwareOnlyCiphers.load(ordering: .relaxed)) {
            let written = try software.validatedOneShotCrypt(direction, spec, key: key, iv: iv, input: input, output: output)
            CallCounts.incrementLast(cipherCountSlots[Self.cipherCountIndex(spec.algorithm, spec.mode, direction)])
            return written
        }
        return try routedCrypt(direction, spec, key: key, iv: iv, input: input, output: output)
    }

    /// A validated cipher call that may leave software, or whose thread counted for another dispatcher last.
    @inline(never)
    private func routedCrypt(
        _ direction: CipherDirection, _ spec: CipherSpec, key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer?,
        input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws -> Int {
        let route = Route.cipher(spec.algorithm, spec.mode, direction)
        if let route, mayOffload(route, size: input.count) {
            return try cryptAway(route, direction, spec, key: key, iv: iv, input: input, output: output)
        }
        let written = try software.validatedOneShotCrypt(direction, spec, key: key, iv: iv, input: input, output: output)
        record(route, backend: -1)
        return written
    }

    @inline(never)
    private func cryptAway(
        _ route: Route, _ direction: CipherDirection, _ spec: CipherSpec, key: UnsafeRawBufferPointer,
        iv: UnsafeRawBufferPointer?, input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws -> Int {
        try routeAway(
            route, size: input.count, { try $0.crypt(direction, spec, key: key, iv: iv, input: input, output: output) },
            software: { try software.crypt(direction, spec, key: key, iv: iv, input: input, output: output) })
    }

    public func digest(_ algorithm: DigestAlgorithm, input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer)
        throws
    {
        // A small digest is a few tens of nanoseconds, so the software-only path is one compare, and the count comes
        // before the C call, so that nothing of the dispatcher's lives across it.
        if CallCounts.isLast(softwareOnlyDigests.load(ordering: .relaxed)) {
            return try software.oneShotDigest(algorithm, input: input, output: output) {
                CallCounts.incrementLast(Self.countSlot(Route.digest(algorithm), backend: -1))
            }
        }
        try routedDigest(algorithm, input: input, output: output)
    }

    /// A digest call that may leave software, or whose thread counted for another dispatcher last.
    @inline(never)
    private func routedDigest(_ algorithm: DigestAlgorithm, input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer)
        throws
    {
        let route = Route.digest(algorithm)
        if let route, mayOffload(route, size: input.count) {
            return try digestAway(route, algorithm, input: input, output: output)
        }
        try software.oneShotDigest(algorithm, input: input, output: output) { record(route, backend: -1) }
    }

    @inline(never)
    private func digestAway(
        _ route: Route, _ algorithm: DigestAlgorithm, input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws {
        try routeAway(
            route, size: input.count, { try $0.digest(algorithm, input: input, output: output) },
            software: { try software.digest(algorithm, input: input, output: output) })
    }

    public func hmac(
        _ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer,
        output: UnsafeMutableRawBufferPointer
    ) throws {
        // As ``digest(_:input:output:)``.
        if CallCounts.isLast(softwareOnlyHMACs.load(ordering: .relaxed)) {
            return try software.oneShotHMAC(algorithm, key: key, input: input, output: output) {
                CallCounts.incrementLast(Self.countSlot(Route.hmac(algorithm), backend: -1))
            }
        }
        try routedHMAC(algorithm, key: key, input: input, output: output)
    }

    /// An HMAC call that may leave software, or whose thread counted for another dispatcher last.
    @inline(never)
    private func routedHMAC(
        _ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer,
        output: UnsafeMutableRawBufferPointer
    ) throws {
        let route = Route.hmac(algorithm)
        if let route, mayOffload(route, size: input.count) {
            return try hmacAway(route, algorithm, key: key, input: input, output: output)
        }
        try software.oneShotHMAC(algorithm, key: key, input: input, output: output) { record(route, backend: -1) }
    }

    @inline(never)
    private func hmacAway(
        _ route: Route, _ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer,
        output: UnsafeMutableRawBufferPointer
    ) throws {
        try routeAway(
            route, size: input.count, { try $0.hmac(algorithm, key: key, input: input, output: output) },
            software: { try software.hmac(algorithm, key: key, input: input, output: output) })
    }

    /// AES-GCM: software (no offload route: the phone's engine had none), counted as "other".
    public func seal(
        _ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer
    ) throws {
        try software.seal(algorithm, key: key, nonce: nonce, aad: aad, input: input, output: output, tag: tag)
        record(nil, backend: -1)
    }

    public func open(
        _ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        input: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws {
        try software.open(algorithm, key: key, nonce: nonce, aad: aad, input: input, tag: tag, output: output)
        record(nil, backend: -1)
    }

    /// A keyed AES-GCM: software, as the one-shot calls.
    public func makeAEADKey(_ algorithm: AEADAlgorithm, key: UnsafeRawBufferPointer) throws -> any AEADKey {
        try software.makeAEADKey(algorithm, key: key)
    }

    /// A keyed HMAC: software's (an engine keys per request; a key kept for many short messages is what software
    /// does best). Its MACs are not routed, so not counted.
    public func makeHMACKey(_ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer) throws -> any HMACKey {
        try software.makeHMACKey(algorithm, key: key)
    }

    /// A cipher stream whose backend is chosen by the size of its first ``CipherStream/update(_:into:)``.
    public func makeCipherStream(
        _ direction: CipherDirection, _ spec: CipherSpec, key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer?
    ) throws -> any CipherStream {
        try spec.validate(keyCount: key.count, ivCount: iv?.count)
        guard software.supports(.cipher(spec.algorithm, spec.mode)) else {
            throw CryptoError(.unsupported, "no backend offers \(spec)")
        }
        return DispatchCipherStream(self, direction, spec, key: key, iv: iv)
    }

    /// A digest stream whose backend is chosen by the size of its first update.
    public func makeDigestStream(_ algorithm: DigestAlgorithm) throws -> any DigestStream {
        DispatchDigestStream(self, algorithm, key: nil)
    }

    /// An HMAC stream whose backend is chosen by the size of its first update.
    public func makeHMACStream(_ algorithm: DigestAlgorithm, key: UnsafeRawBufferPointer) throws -> any DigestStream {
        guard algorithm.supportsHMAC else { throw CryptoError(.unsupported, "no HMAC over \(algorithm)") }
        return DispatchDigestStream(self, algorithm, key: key)
    }

}
