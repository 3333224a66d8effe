internal import COpenSSL
import Synchronization

/// An OpenSSL store holding one anchor, shared by every validation of a path that ends at it: building one per path
/// (`X509_STORE_new` with its lock, the anchor added under it, then freed) was a visible share of a short SSL
/// evaluation, which an application built on OpenSSL avoids by preparing its store once. A store is safe to share:
/// validations only read it (the contexts get their own parameters, CRLs and untrusted certificates), under its
/// own lock.
final class AnchorStore: @unchecked Sendable {
    // @unchecked: the store is written once, in init; OpenSSL locks its reads.
    let store: OpaquePointer

    fileprivate init?(anchor: OpaquePointer) {
        guard let store = X509_STORE_new() else { return nil }
        // X509_STORE_add_cert takes its own reference to the anchor.
        guard X509_STORE_add_cert(store, anchor) == 1 else {
            X509_STORE_free(store)
            return nil
        }
        self.store = store
    }

    deinit { X509_STORE_free(store) }
}

/// The stores of the anchors validated against most recently, by the anchor's `X509` object. Its address is a sound
/// key: each store holds a reference to its anchor's `X509`, so while an entry exists the object cannot be freed
/// and its address cannot be taken by another certificate. A validation holds the ``AnchorStore`` it got, so an
/// entry evicted meanwhile frees its store only after that validation.
final class AnchorStores: Sendable {
    /// The process's: more entries than the system bundle has anchors (about 140), each a few hundred bytes.
    static let shared = AnchorStores(capacity: 256)

    let capacity: Int

    private struct State {
        var entries: [UInt: (store: AnchorStore, lastUse: UInt64)] = [:]
        var clock: UInt64 = 0
    }
    private let state = Mutex(State())

    init(capacity: Int) { self.capacity = max(capacity, 1) }

    /// The store holding `anchor`, made on first use (the least recently used one goes when the cache is full); nil
    /// when OpenSSL cannot allocate one.
    func store(for anchor: OpaquePointer) -> AnchorStore? {
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(anchor)))
        return state.withLock { state in
            state.clock += 1
            if let entry = state.entries[key] {
                state.entries[key]?.lastUse = state.clock
                return entry.store
            }
            guard let store = AnchorStore(anchor: anchor) else { return nil }
            if state.entries.count >= capacity, let oldest = state.entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                state.entries.removeValue(forKey: oldest.key)
            }
            state.entries[key] = (store, state.clock)
            return store
        }
    }

    /// How many stores are kept.
    var count: Int { state.withLock { $0.entries.count } }
}
