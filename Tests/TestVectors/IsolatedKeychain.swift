import Foundation
import Keychain
public import Testing
import Trust

/// Gives each test of a suite a keychain of its own in a fresh temporary directory, as the default keychain of
/// the test's task (`KeychainDefaults.withStore`), and user and administrator trust settings of its own there
/// (`TrustSettingsDomains.withDomains`): suites that drive the `Security` API can run in parallel, even from
/// different test targets, without seeing each other's items or settings.
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
        let store = try KeychainStore(path: directory.appendingPathComponent("keychain.db").path, accessGroups: accessGroups)
        try await KeychainDefaults.withStore(store) {
            try await TrustSettingsDomains.withDomains(TrustSettingsDomains(directory: directory.path)) {
                try await function()
            }
        }
    }
}

extension Trait where Self == IsolatedKeychain {
    /// A fresh default keychain per test, for a caller in `accessGroups`.
    public static func isolatedKeychain(_ accessGroups: [String]) -> Self { IsolatedKeychain(accessGroups: accessGroups) }
}
