import Certificates
import Foundation
import TestVectors
import Testing
import Trust

/// Netflix's BetterTLS suite (the odd-numbered half, in the x509-limbo format) from `../shared/vectors/`: every case
/// through ``TrustEvaluator`` with the SSL policy, the case's peer name, validation time, anchors and intermediates.
@Suite("BetterTLS (x509-limbo format)", .hostOnly)
struct BetterTLSTests {
    struct Limbo: Decodable {
        let testcases: [Case]
    }

    struct Case: Decodable {
        struct PeerName: Decodable {
            let kind: String
            let value: String
        }
        let id: String
        let description: String
        let peer_certificate: String
        let untrusted_intermediates: [String]
        let trusted_certs: [String]
        let validation_time: String?
        let expected_peer_name: PeerName?
        let expected_result: String
    }

    /// `../shared/vectors/bettertls-odd.limbo.json.xz` relative to the repository root.
    static var vectorFile: URL {
        // #filePath is <root>/Tests/TrustTests/BetterTLSTests.swift.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return root.appendingPathComponent("../shared/vectors/bettertls-odd.limbo.json.xz").standardizedFileURL
    }

    static func load() throws -> [Case] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/xz")
        process.arguments = ["-dc", vectorFile.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return try JSONDecoder().decode(Limbo.self, from: data).testcases
    }

    /// One case's verdict: trusted or not, and the result to print when it is wrong.
    static func run(_ testCase: Case) throws -> (trusted: Bool, detail: String) {
        let anchors = try testCase.trusted_certs.map { try Certificate(pemEncoded: $0) }
        let intermediates = try testCase.untrusted_intermediates.map { try Certificate(pemEncoded: $0) }
        let leaf = try Certificate(pemEncoded: testCase.peer_certificate)
        let date = testCase.validation_time.flatMap { ISO8601DateFormatter().date(from: $0) }
        let evaluator = TrustEvaluator(
            anchors: anchors, policies: [.sslServer(hostname: testCase.expected_peer_name?.value)],
            verificationDate: date)
        let result = try evaluator.evaluate(leaf, intermediates: intermediates)
        return (result.isTrusted, "\(result)")
    }

    @Test("every case gives the expected result")
    func everyCase() throws {
        guard FileManager.default.fileExists(atPath: Self.vectorFile.path) else {
            Issue.record("missing \(Self.vectorFile.path)")
            return
        }
        let cases = try Self.load()
        #expect(cases.count == 4785)
        var passed = 0
        var falseAccepts: [String] = []
        var falseRejects: [String] = []
        for testCase in cases {
            let expected = testCase.expected_result == "SUCCESS"
            let (trusted, detail) = try Self.run(testCase)
            if trusted == expected {
                passed += 1
            } else if trusted {
                falseAccepts.append("\(testCase.id) (\(testCase.expected_peer_name?.value ?? "-")): \(detail)")
            } else {
                falseRejects.append("\(testCase.id) (\(testCase.expected_peer_name?.value ?? "-")): \(detail)")
            }
        }
        print(
            "BetterTLS: \(passed) / \(cases.count) passed, \(falseAccepts.count) false accepts, "
                + "\(falseRejects.count) false rejects")
        for line in falseAccepts.prefix(40) { print("  false accept: \(line)") }
        for line in falseRejects.prefix(40) { print("  false reject: \(line)") }
        #expect(falseAccepts.isEmpty, "\(falseAccepts.count) false accepts")
        #expect(falseRejects.isEmpty, "\(falseRejects.count) false rejects")
    }
}
