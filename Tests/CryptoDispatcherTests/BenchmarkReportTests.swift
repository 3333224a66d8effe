import Foundation
import TestVectors
import Testing

/// `secbench`'s report where it runs under an emulated CPU: the comparisons with C and the harness target are
/// printed as not judged, with the reason (on the results page too); the dispatch target keeps its verdict.
@Suite("secbench: targets judged only where they mean something", .hostOnly)
struct BenchmarkReportTests {
    /// The "targets" lines of one short run of AES-128-ECB at 16 bytes, with `environment` added (and the JSON written
    /// to `json`, if given).
    static func targets(_ environment: [String: String], json: String? = nil) throws -> [String] {
        let run = try BuiltExecutable.run(
            BuiltExecutable.named("secbench"),
            ["--operations", "aes-128-ecb-encrypt", "--sizes", "16", "--threads", "0", "--budget", "5"] + (json.map { ["--json", $0] } ?? []),
            environment: environment)
        #expect(run.status == 0, "\(run.stdout.suffix(500))")
        return run.stdout.split(separator: "\n").map(String.init).filter { $0.hasPrefix("  PASS") || $0.hasPrefix("  MISS") || $0.hasPrefix("  ----") }
    }

    @Test("under tcg the comparisons with C and the harness target are not judged, with the reason; dispatch keeps PASS or MISS")
    func emulated() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("report-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let json = directory.appendingPathComponent("bench.json").path
        let emulated = try Self.targets(["SECURITYSERVICES_EMULATION": "tcg"], json: json)
        let notJudged = emulated.filter { $0.hasPrefix("  ----") }
        #expect(notJudged.count == 4, "\(emulated)")
        #expect(notJudged.allSatisfy { $0.contains("not judged under tcg CPU emulation") }, "\(notJudged)")
        for name in ["16 B-1 KiB, repeated key", "fresh key each call", "at >= 64 KiB", "harness:"] {
            #expect(notJudged.contains { $0.contains(name) }, "\(name): \(notJudged)")
        }
        #expect(emulated.contains { $0.contains("dispatch / max(software, engine)") && !$0.hasPrefix("  ----") }, "\(emulated)")
        // The results page says why under its table.
        let page = directory.appendingPathComponent("results.md").path
        let written = try BuiltExecutable.run(BuiltExecutable.named("secbench"), ["--results-page", page, "--from", json])
        #expect(written.status == 0, "\(written.stdout.suffix(500))")
        let text = try String(contentsOfFile: page, encoding: .utf8)
        #expect(text.contains("| ---- | harness:") && text.contains("`----`: not judged under tcg CPU emulation"), "\(text)")
        // On the host every target is judged.
        let host = try Self.targets(["SECURITYSERVICES_EMULATION": ""])
        #expect(!host.isEmpty && host.allSatisfy { !$0.hasPrefix("  ----") }, "\(host)")
    }
}
