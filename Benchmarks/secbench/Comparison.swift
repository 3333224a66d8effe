import Foundation

/// Timing two implementations of one call against each other in the same process: batches sized to a time
/// budget, alternating which side goes first, medians of per-call times.
enum Comparison {
    /// Median microseconds per call of `ours` and of `theirs` over `rounds` alternating rounds.
    static func compare(
        rounds: Int, budget: Duration, ours: () -> Bool, theirs: () -> Bool
    ) -> (ours: Double, theirs: Double) {
        // Calls per batch: enough for the budget, from one timed call of the slower side.
        let single = max(seconds { _ = ours() }, seconds { _ = theirs() }, 1e-9)
        let calls = max(3, Int(seconds(of: budget) / single))
        var ourTimes: [Double] = []
        var theirTimes: [Double] = []
        for round in 0..<rounds {
            // Alternate which side goes first, so neither always runs on a warmer cache or a quieter moment.
            for isOurs in round.isMultiple(of: 2) ? [true, false] : [false, true] {
                let body = isOurs ? ours : theirs
                let perCall = seconds { for _ in 0..<calls { _ = body() } } / Double(calls) * 1e6
                if isOurs { ourTimes.append(perCall) } else { theirTimes.append(perCall) }
            }
        }
        return (median(ourTimes), median(theirTimes))
    }

    static func seconds(of duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = ContinuousClock.now
        try body()
        return seconds(of: ContinuousClock.now - start)
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        return sorted.count.isMultiple(of: 2)
            ? (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2 : sorted[sorted.count / 2]
    }

    /// Runs the `openssl` CLI in `directory`; its status must be 0.
    static func openssl(_ arguments: [String], in directory: URL) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchFailure("openssl \(arguments[0]) failed") }
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
