internal import COpenSSL
import CryptoContract
#if canImport(Glibc)
import Glibc
#endif

/// Reusable OpenSSL contexts, one set per thread, for the one-shot calls.
///
/// A one-shot call takes its thread's context for the algorithm, uses it and leaves it there: no
/// allocation, no lock, no atomic operation and no reference counting on the hot path (a shared pool costs
/// two atomic operations per call, a fifth of a 16-byte AES call). A thread's contexts are freed —
/// and their key schedules cleansed by OpenSSL — when the thread exits. Calls never nest within a thread,
/// so a context is never used twice at once.
enum ThreadContexts {
    /// Slot layout: one cipher context, then a digest context per ``DigestAlgorithm``, then an HMAC
    /// context per ``DigestAlgorithm``.
    private static let digestBase = 1
    private static let hmacBase = 1 + DigestAlgorithm.indexCount
    private static let slotCount = 1 + 2 * DigestAlgorithm.indexCount

    /// The thread-specific key; its destructor frees a thread's contexts at thread exit.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        // pthread_key_create: "the destructor is called with the key's last non-NULL value at thread exit".
        let status = pthread_key_create(&key) { raw in
            guard let raw else { return }
            let slots = raw.assumingMemoryBound(to: OpaquePointer?.self)
            ThreadContexts.free(slots)
        }
        precondition(status == 0, "pthread_key_create failed: the process is out of thread-specific keys")
        return key
    }()

    /// This thread's slots, made on first use.
    @inline(__always)
    private static func slots() -> UnsafeMutablePointer<OpaquePointer?> {
        if let raw = pthread_getspecific(key) { return raw.assumingMemoryBound(to: OpaquePointer?.self) }
        let slots = UnsafeMutablePointer<OpaquePointer?>.allocate(capacity: slotCount)
        slots.initialize(repeating: nil, count: slotCount)
        pthread_setspecific(key, slots)
        return slots
    }

    /// This thread's cipher context; `nil` only when OpenSSL cannot allocate one.
    @inline(__always)
    static func cipher() -> OpaquePointer? {
        let slots = slots()
        if let context = slots[0] { return context }
        slots[0] = EVP_CIPHER_CTX_new()
        return slots[0]
    }

    /// Frees this thread's cipher context (a failure left it in a state the next call must not inherit).
    static func discardCipher() {
        let slots = slots()
        if let context = slots[0] { EVP_CIPHER_CTX_free(context) }
        slots[0] = nil
    }

    @inline(__always)
    static func digest(_ algorithm: DigestAlgorithm) -> OpaquePointer? {
        let slots = slots()
        let index = digestBase + algorithm.index
        if let context = slots[index] { return context }
        slots[index] = EVP_MD_CTX_new()
        return slots[index]
    }

    /// This thread's HMAC context for `algorithm`, with its digest chosen.
    @inline(__always)
    static func hmac(_ algorithm: DigestAlgorithm) -> OpaquePointer? {
        let slots = slots()
        let index = hmacBase + algorithm.index
        if let context = slots[index] { return context }
        slots[index] = SoftwareBackend.makeHMACContext(algorithm)
        return slots[index]
    }

    private static func free(_ slots: UnsafeMutablePointer<OpaquePointer?>) {
        if let context = slots[0] { EVP_CIPHER_CTX_free(context) }
        for index in 0..<DigestAlgorithm.indexCount {
            if let context = slots[digestBase + index] { EVP_MD_CTX_free(context) }
            if let context = slots[hmacBase + index] { EVP_MAC_CTX_free(context) }
        }
        slots.deinitialize(count: slotCount)
        slots.deallocate()
    }
}
