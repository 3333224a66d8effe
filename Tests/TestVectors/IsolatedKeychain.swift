import Foundation
import Keychain
import KeychainService
public import Testing
import Trust

/// Gives each test of a suite a keychain of its own in a fresh temporary directory, as the default keychain of
/// the test's task (`KeychainDefaults.withStore`), and user and administrator trust settings of its own there
/// (`TrustSettingsDomains.withDomains`): suites that drive the `Security` API can run in parallel, even from
/// different test targets, without seeing each other's items or settings.
///
/// With `SECURITYSERVICES_TEST_KEYCHAIN_MODE=service` the keychain is a keychain service's instead (`make test`
/// runs the keychain suites both ways): a service of the test's own in that directory, whose policy grants this
/// test binary (by its SHA-256) the suite's groups, and the store talks to it over its socket.
public struct IsolatedKeychain: SuiteTrait, TestTrait, TestScoping {
    let accessGroups: [String]

    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        guard testCase != nil else { return try await function() }  // the suite itself: nothing to set up
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keychain-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var service: KeychainService?
        defer { service?.stop() }
        let store: KeychainStore
        if Self.serviceMode {
            let policy = directory.appendingPathComponent("applications.d")
            try FileManager.default.createDirectory(at: policy, withIntermediateDirectories: true)
            let entry = ApplicationPolicy.Entry(name: "tests", sha256: try Self.testBinarySHA256, accessGroups: accessGroups)
            try JSONEncoder().encode([entry]).write(to: policy.appendingPathComponent("tests.json"))
            let socket = directory.appendingPathComponent("securityd.sock").path
            let started = try KeychainService(
                .init(socketPath: socket, directory: directory.appendingPathComponent("keychains").path, policyDirectories: [policy.path]))
            started.start()
            service = started
            store = try KeychainStore(service: socket, accessGroups: accessGroups)
        } else {
            store = try KeychainStore(path: directory.appendingPathComponent("keychain.db").path, accessGroups: accessGroups)
        }
        try await KeychainDefaults.withStore(store) {
            try await TrustSettingsDomains.withDomains(TrustSettingsDomains(directory: directory.path)) {
                try await function()
            }
        }
    }
}

extension IsolatedKeychain {
    /// Whether the keychain suites run against a keychain service (`SECURITYSERVICES_TEST_KEYCHAIN_MODE=service`).
    public static let serviceMode = ProcessInfo.processInfo.environment["SECURITYSERVICES_TEST_KEYCHAIN_MODE"] == "service"

    /// The SHA-256 of this test binary, as the service identifies it.
    static var testBinarySHA256: String {
        get throws { try digest.get() }
    }

    private static let digest = Result { try PeerIdentity.executableDigest(pid: getpid()) }
}

extension Trait where Self == IsolatedKeychain {
    /// A fresh default keychain per test, for a caller in `accessGroups`.
    public static func isolatedKeychain(_ accessGroups: [String]) -> Self { IsolatedKeychain(accessGroups: accessGroups) }
}
