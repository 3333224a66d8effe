import Foundation
import Security
import TestVectors
import Testing

/// The system and administrator anchors come from the environment, read once per process: so the evaluation runs in
/// a child process (this test binary, filtered to `childEvaluation`) given a bundle and an administrator directory.
@Suite("Security: system and administrator anchors from the environment")
struct SystemAnchorsTests {
    /// Set in the child: the directory holding the certificates and anchors the parent wrote.
    static let childDirectory = ProcessInfo.processInfo.environment["SECTRUST_ANCHORS_CHILD"]

    @Test(
        "child: the bundle's (unspecified) and the administrator's (proceed) anchors are trusted by default, no other",
        .enabled(if: childDirectory != nil))
    func childEvaluation() throws {
        let directory = URL(fileURLWithPath: try #require(Self.childDirectory))
        func certificate(_ name: String) throws -> SecCertificate {
            let pem = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            return try #require(SecCertificateCreateWithData(nil, try TrustFixtures.der(pem) as CFData))
        }
        func result(_ certificates: [SecCertificate]) -> SecTrustResultType {
            var trust: SecTrust?
            guard SecTrustCreateWithCertificates(certificates as CFArray, nil, &trust) == errSecSuccess, let trust
            else {
                return .invalid
            }
            var result = SecTrustResultType.invalid
            return SecTrustEvaluate(trust, &result) == errSecSuccess ? result : .invalid
        }
        // The leaf chains to the administrator's root (a DER file): trusted by an admin setting, Proceed.
        #expect(result([try certificate("leaf.pem"), try certificate("inter.pem")]) == .proceed)
        // The same root set by the application is its own anchor: Unspecified.
        var trust: SecTrust?
        #expect(
            SecTrustCreateWithCertificates(
                [try certificate("leaf.pem"), try certificate("inter.pem")] as CFArray, nil, &trust) == errSecSuccess)
        let byApplication = try #require(trust)
        #expect(SecTrustSetAnchorCertificates(byApplication, [try certificate("root.pem")] as CFArray) == errSecSuccess)
        var settled = SecTrustResultType.invalid
        #expect(SecTrustEvaluate(byApplication, &settled) == errSecSuccess && settled == .unspecified)
        // The bundle's root (the only certificate of the overriding bundle) is an anchor.
        #expect(result([try certificate("otherRoot.pem")]) == .unspecified)
        // The distribution's bundle is not read: its roots are not anchors.
        #expect(result([try certificate("distributionRoot.pem")]) == .recoverableTrustFailure)
    }

    @Test("parent: SECURITYSERVICES_SYSTEM_ANCHORS and SECURITYSERVICES_ADMIN_ANCHORS replace the defaults")
    func environment() throws {
        guard Self.childDirectory == nil else { return }
        let fixtures = try TrustFixtures.get()
        let temporary = try TemporaryDirectory("sectrust-anchors")
        let directory = temporary.url
        let administrator = directory.appendingPathComponent("admin")
        try FileManager.default.createDirectory(at: administrator, withIntermediateDirectories: true)
        func pem(_ name: String) throws -> String { try #require(fixtures.pem[name]) }
        for name in ["leaf", "inter", "otherRoot", "root"] {
            try Data(pem(name).utf8).write(to: directory.appendingPathComponent("\(name).pem"))
        }
        let (_, distributionRoot) = try SecTrustTests.systemRoot()
        try Data(distributionRoot.utf8).write(to: directory.appendingPathComponent("distributionRoot.pem"))
        try Data(pem("otherRoot").utf8).write(to: directory.appendingPathComponent("bundle.crt"))
        try TrustFixtures.der(pem("root")).write(to: administrator.appendingPathComponent("root.der"))
        try Data("not a certificate".utf8).write(to: administrator.appendingPathComponent("README"))

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["--testing-library", "swift-testing", "--filter", "SystemAnchorsTests/childEvaluation"]
        var environment = ProcessInfo.processInfo.environment
        environment["SECTRUST_ANCHORS_CHILD"] = directory.path
        environment["SECURITYSERVICES_SYSTEM_ANCHORS"] = directory.appendingPathComponent("bundle.crt").path
        environment["SECURITYSERVICES_ADMIN_ANCHORS"] = administrator.path
        // A failed evaluation searches the default keychain: the child's is a temporary one.
        environment["SECURITYSERVICES_KEYCHAIN"] = directory.appendingPathComponent("keychain.db").path
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(
            text.contains("Test run with 1 test") && text.contains("passed") && !text.contains("skipped"), "\(text)")
    }
}
