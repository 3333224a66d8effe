import Foundation
@testable import FuzzTargets
import Security
import TestVectors
import Testing

/// Every input a fuzz run found crashing is kept in `Tests/Fuzz/Regressions/<target>/` and runs here
/// through its target, with each target's generated seeds (a target traps when an invariant breaks: this test
/// then crashes, as the fuzzer did).
@Suite("Fuzz targets: the seeds and every kept crash input run clean")
struct FuzzRegressionTests {
    static let regressions = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/Regressions")

    @Test("each target's seeds", arguments: FuzzTarget.all.map(\.name))
    func seeds(_ name: String) throws {
        let target = try #require(FuzzTarget.named(name))
        let seeds = target.seeds()
        for seed in seeds { target.run(seed) }
    }

    @Test(
        "every kept crash input, through its target (the folders name targets that exist)",
        .disabled(if: AFALGGate.required, "host only: it reads the source tree, which the AF_ALG VM does not have"))
    func regressions() throws {
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.regressions.path).sorted()
        #expect(!folders.isEmpty)
        for folder in folders {
            let target = try #require(FuzzTarget.named(folder), "Regressions/\(folder) names no fuzz target")
            let directory = Self.regressions.appendingPathComponent(folder)
            for file in try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() {
                target.run(try Data(contentsOf: directory.appendingPathComponent(file)))
            }
        }
    }
}

/// The OCSP target's fixed world is sound: its good response admits the leaf under the hard-fail policy, and no
/// response, or bytes that are none, refuse it (so the fuzzer explores both sides).
@Suite("Fuzz targets: the OCSP world")
struct FuzzOCSPWorldTests {
    @Test("the good stapled response admits the leaf; none or garbage does not")
    func world() throws {
        try #require(FuzzChain.certificates.count == 2)
        #expect(FuzzChain.evaluate(stapling: FuzzChain.goodResponse))
        #expect(!FuzzChain.evaluate(stapling: nil))
        #expect(!FuzzChain.evaluate(stapling: Data("not ocsp".utf8)))
    }
}
