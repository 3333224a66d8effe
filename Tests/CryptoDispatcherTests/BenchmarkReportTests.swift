import Foundation
import TestVectors
import Testing

/// `secbench`'s report where it runs under an emulated CPU (issue 38, item 5): the host's small-call and harness
/// targets are printed as not judged, with the reason; the others keep their verdicts.
@Suite("secbench: targets judged only where they mean something", .hostOnly)
struct BenchmarkReportTests {
    /// The built `secbench` beside the test bundle, else in the package's `.build/debug`.
    static func binary() throws -> URL {
        var directories: [URL] = []
        if let bundle = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            directories.append(URL(fileURLWithPath: bundle).deletingLastPathComponent())
        }
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        directories.append(package.appendingPathComponent(".build/debug"))
        let candidates = directories.map { $0.appendingPathComponent("secbench") }
        return try #require(candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }, "secbench is not built")
    }

    /// The "targets" lines of one short sweep of AES-128-ECB at 16 bytes, with `environment` added.
    static func targets(_ environment: [String: String]) throws -> [String] {
        let process = Process()
        process.executableURL = try binary()
        process.arguments = ["--operations", "aes-128-ecb-encrypt", "--sizes", "16", "--threads", "0", "--budget", "5"]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text.suffix(500))")
        return text.split(separator: "\n").map(String.init).filter { $0.hasPrefix("  PASS") || $0.hasPrefix("  MISS") || $0.hasPrefix("  ----") }
    }

    @Test("under tcg the small-call and harness targets are not judged, with the reason; the others keep PASS or MISS")
    func emulated() throws {
        let emulated = try Self.targets(["SECURITYSERVICES_EMULATION": "tcg"])
        let notJudged = emulated.filter { $0.hasPrefix("  ----") }
        #expect(notJudged.count == 3, "\(emulated)")
        #expect(notJudged.allSatisfy { $0.contains("not judged under tcg CPU emulation") }, "\(notJudged)")
        #expect(notJudged.contains { $0.contains("16 B-1 KiB, repeated key") } && notJudged.contains { $0.contains("harness:") })
        #expect(emulated.contains { $0.contains("dispatch / max(software, kernel)") && !$0.hasPrefix("  ----") }, "\(emulated)")
        // On the host every target is judged.
        let host = try Self.targets(["SECURITYSERVICES_EMULATION": ""])
        #expect(!host.isEmpty && host.allSatisfy { !$0.hasPrefix("  ----") }, "\(host)")
    }
}
