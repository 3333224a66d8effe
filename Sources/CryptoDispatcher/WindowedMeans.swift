import Synchronization

/// A table of means learned a window of samples at a time (the cost model's costs and shares, one slot per route, size
/// class and backend). A full window of ``size`` samples moves its slot's mean halfway to the window's own mean without
/// its greatest sample. So the mean counts slow samples as often as they come (an engine's calls queued behind other
/// callers' requests are part of what it costs), one long stall in a window counts for nothing, and a change of level
/// moves the mean within two windows. The first window after the mean was set (a probe's least time, optimistic on
/// purpose) or after a restart (``restart(_:)``: a backend in use again after another had the calls, its mean learned
/// at another time) is ``firstSize`` samples and replaces the mean, so that a lucky probe or a stale mean is corrected
/// within a few calls. A mean moved by each sample, clipped so that one stall cannot tip it, is pulled below the level
/// by the clip whenever slow samples are common, and then kicked above it by any run of them: such an engine looks
/// cheap and dear by turns.
///
/// Thread-safe without locks: each value is one atomic; two threads closing one window at once may lose a sample.
final class WindowedMeans: @unchecked Sendable {
    // @unchecked: the tables are allocated in init, freed in deinit and only accessed through atomics in between.

    /// Samples per window.
    static let size = 16
    /// Samples in the first window after the mean was set.
    static let firstSize = 4

    private let means: UnsafeMutablePointer<Atomic<Int>>
    /// Per slot, the window under way: `its length << 32 | samples gathered` (length 0: ``size``, and the window moves
    /// the mean; otherwise it replaces it), their sum and the greatest.
    private let counts: UnsafeMutablePointer<Atomic<Int>>
    private let sums: UnsafeMutablePointer<Atomic<Int>>
    private let greatest: UnsafeMutablePointer<Atomic<Int>>
    private let slots: Int

    init(slots: Int) {
        self.slots = slots
        means = .atomics(count: slots, value: 0)
        counts = .atomics(count: slots, value: 0)
        sums = .atomics(count: slots, value: 0)
        greatest = .atomics(count: slots, value: 0)
    }

    deinit {
        for table in [means, counts, sums, greatest] { table.free(count: slots) }
    }

    /// The slot's mean, 0 while unknown.
    @inline(__always)
    subscript(slot: Int) -> Int { means[slot].load(ordering: .relaxed) }

    /// Sets the slot's mean, and starts a first window (samples gathered before are of another time).
    @inline(__always)
    func replace(_ slot: Int, with mean: Int) {
        means[slot].store(mean, ordering: .relaxed)
        restart(slot)
    }

    /// Whether a first window is under way: the mean was set or the slot restarted, and its samples are still to
    /// confirm or replace it.
    @inline(__always)
    func inFirstWindow(_ slot: Int) -> Bool { counts[slot].load(ordering: .relaxed) >> 32 != 0 }

    /// Starts a first window: its samples replace the mean.
    @inline(__always)
    func restart(_ slot: Int) { startWindow(slot, length: Self.firstSize) }

    /// Empties the slot's window; `length` 0 for a full one that moves the mean, else the samples of one that
    /// replaces it.
    @inline(__always)
    private func startWindow(_ slot: Int, length: Int) {
        counts[slot].store(length << 32, ordering: .relaxed)
        sums[slot].store(0, ordering: .relaxed)
        greatest[slot].store(0, ordering: .relaxed)
    }

    /// Sets the slot's mean where nothing was learned yet; false if something was.
    @inline(__always)
    func seed(_ slot: Int, with mean: Int) -> Bool {
        means[slot].compareExchange(expected: 0, desired: mean, ordering: .relaxed).exchanged
    }

    /// Lowers the slot's mean to `value` if it is below it (or sets it, while unknown).
    @inline(__always)
    func lower(_ slot: Int, to value: Int) {
        let mean = means[slot].load(ordering: .relaxed)
        if mean == 0 || value < mean { means[slot].store(value, ordering: .relaxed) }
    }

    /// Adds a sample to the slot's window; a full window moves the mean (a slot without one takes the sample as it).
    @inline(__always)
    func learn(_ slot: Int, _ sample: Int) {
        let mean = means[slot].load(ordering: .relaxed)
        guard mean > 0 else { return replace(slot, with: sample) }
        let sum = sums[slot].add(sample, ordering: .relaxed).newValue
        let most = max(greatest[slot].load(ordering: .relaxed), sample)
        let window = counts[slot].add(1, ordering: .relaxed).newValue
        let count = window & 0xFFFF_FFFF, length = window >> 32
        guard count >= (length == 0 ? Self.size : length) else {
            greatest[slot].store(most, ordering: .relaxed)
            return
        }
        startWindow(slot, length: 0)
        // At least 1: a window closed by two threads at once can have lost its sum.
        let trimmed = max((sum &- most) / (count &- 1), 1)
        means[slot].store(length == 0 ? max((mean &+ trimmed) / 2, 1) : trimmed, ordering: .relaxed)
    }
}
