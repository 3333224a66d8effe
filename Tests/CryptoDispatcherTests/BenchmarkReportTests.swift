import Foundation
import TestVectors
import Testing

/// `secbench`'s report where it runs under an emulated CPU: the host's small-call and harness
/// targets are printed as not judged, with the reason; the others keep their verdicts.
@Suite("secbench: targets judged only where they mean something", .hostOnly)
struct BenchmarkReportTests {
    /// The "targets" lines of one short run of AES-128-ECB at 16 bytes, with `environment` added.
    static func targets(_ environment: [String: String]) throws -> [String] {
        let run = try BuiltExecutable.run(
            BuiltExecutable.named("secbench"), ["--operations", "aes-128-ecb-encrypt", "--sizes", "16", "--threads", "0", "--budget", "5"],
            environment: environment)
        #expect(run.status == 0, "\(run.stdout.suffix(500))")
        return run.stdout.split(separator: "\n").map(String.init).filter { $0.hasPrefix("  PASS") || $0.hasPrefix("  MISS") || $0.hasPrefix("  ----") }
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
