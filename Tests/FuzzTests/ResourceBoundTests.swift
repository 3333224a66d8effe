import Foundation
import FuzzTargets
import TestVectors
import Testing

/// 100,000 failing calls of every fuzz target's API (fewer for the slow ones: see
/// `securityfuzz bounds`) leave the process's descriptors as they were and its resident memory within 4 MiB (a leak of 42 bytes a
/// call would pass it). Run in `securityfuzz bounds`, a process of its own, so that the suite's other tests do
/// not move the numbers.
@Suite("Fuzz targets: failing calls leak no descriptor and no memory")
struct ResourceBoundTests {
    /// The plain `securityfuzz` driver, beside the test bundle.
    static func driver() throws -> URL {
        let bundle = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        let candidates = [bundle.deletingLastPathComponent(), URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.build/debug")]
            .map { $0.appendingPathComponent("securityfuzz") }
        return try #require(candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }, "securityfuzz not built")
    }

    @Test(
        "100,000 failing calls a target: descriptors unchanged, resident memory within 4 MiB",
        .disabled(if: AFALGGate.required, "host only: the driver is not copied into the AF_ALG VM"),
        .disabled(
            if: ProcessInfo.processInfo.environment["SECURITYSERVICES_SANITIZER"] != nil,
            "under a sanitizer freed memory is held in quarantine, so resident memory says nothing of leaks (the fuzz runs check them)"))
    func bounds() throws {
        let process = Process()
        process.executableURL = try Self.driver()
        process.arguments = ["bounds", "100000"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let lines = text.split(separator: "\n")
        #expect(lines.count == FuzzTarget.all.count, "\(text)")
        for line in lines {
            let fields = line.split(separator: "\t")
            let numbers = fields.dropFirst(2).prefix(2).map { $0.split(separator: " ").dropFirst().compactMap { Int($0) } }
            guard numbers.count == 2, numbers[0].count == 2, numbers[1].count == 2 else {
                Issue.record("unreadable line: \(line)")
                continue
            }
            #expect(numbers[0][0] == numbers[0][1], "\(fields[0]): descriptors \(numbers[0][0]) before, \(numbers[0][1]) after")
            #expect(numbers[1][1] - numbers[1][0] < 4 << 20, "\(fields[0]): resident memory grew by \(numbers[1][1] - numbers[1][0]) bytes")
        }
        print("securityfuzz bounds 100000:\n\(text)")
    }
}
