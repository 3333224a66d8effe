import Synchronization

/// A few reusable C contexts of one kind, handed out lock-free.
///
/// A one-shot call takes a context, uses it and gives it back, so the common single-threaded case allocates
/// nothing per call; concurrent callers that find every slot empty make a context of their own, and a context
/// given back to a full pool is freed. The pool owns the contexts it holds and frees them in `deinit`.
final class ContextPool: @unchecked Sendable {
    // @unchecked: `slots` is only touched through atomics; `make`/`free` are @Sendable.
    private let slots: UnsafeMutablePointer<Atomic<Int>>
    private let count: Int
    private let make: @Sendable () -> OpaquePointer?
    private let free: @Sendable (OpaquePointer) -> Void

    init(slots count: Int, make: @escaping @Sendable () -> OpaquePointer?, free: @escaping @Sendable (OpaquePointer) -> Void) {
        self.count = count
        self.make = make
        self.free = free
        slots = .allocate(capacity: count)
        for index in 0..<count { (slots + index).initialize(to: Atomic(0)) }
    }

    /// A context: a pooled one, else a new one; `nil` only when the C allocator fails.
    func take() -> OpaquePointer? {
        for index in 0..<count {
            let bits = slots[index].exchange(0, ordering: .acquiring)
            if bits != 0 { return OpaquePointer(bitPattern: bits) }
        }
        return make()
    }

    func give(_ context: OpaquePointer) {
        let bits = Int(bitPattern: UnsafeRawPointer(context))
        for index in 0..<count {
            if slots[index].compareExchange(expected: 0, desired: bits, ordering: .releasing).exchanged { return }
        }
        free(context)
    }

    deinit {
        for index in 0..<count {
            let bits = slots[index].load(ordering: .acquiring)
            if let context = OpaquePointer(bitPattern: bits) { free(context) }
        }
        slots.deinitialize(count: count)
        slots.deallocate()
    }
}
