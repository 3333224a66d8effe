import Foundation
import Security
import Testing

/// Apple-platform code compiled unchanged (AccessControlSnippets.swift), run against a password-locked keychain:
/// the keychain's password is the proof of the user that .userPresence asks for.
@Suite("Apple-platform code: keychain items under user presence, unchanged")
struct AccessControlSnippetTests {
    @Test("Apple's Face ID / Touch ID article on a platform without either: the password given to the LAContext reads the item; without it errSecInteractionNotAllowed; a wrong one errSecAuthFailed; an unlock within the reuse duration counts")
    func userPresence() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("presence-\(UUID().uuidString).keychain-db").path
        let password = "the login password"
        var created: SecKeychain?
        #expect(SecKeychainCreate(path, UInt32(password.utf8.count), password, false, nil, &created) == errSecSuccess)
        let keychain = try #require(created)
        defer { _ = SecKeychainDelete(keychain) }
        let credentials = AccessControlSnippets.Credentials(username: "appleseed", password: "s3cr3t")
        try AccessControlSnippets.addCredentials(credentials, to: keychain)

        #expect(try AccessControlSnippets.readCredentials(from: keychain, userPassword: password) == credentials)
        #expect(throws: AccessControlSnippets.KeychainError.unhandledError(status: errSecInteractionNotAllowed)) {
            try AccessControlSnippets.readCredentials(from: keychain, userPassword: nil)
        }
        #expect(throws: AccessControlSnippets.KeychainError.unhandledError(status: errSecInteractionNotAllowed)) {
            try AccessControlSnippets.readCredentials(from: keychain, userPassword: nil, reuse: 10, failWithoutUI: true)
        }
        #expect(throws: AccessControlSnippets.KeychainError.unhandledError(status: errSecAuthFailed)) {
            try AccessControlSnippets.readCredentials(from: keychain, userPassword: "a guess")
        }
        #expect(SecKeychainLock(keychain) == errSecSuccess)
        #expect(SecKeychainUnlock(keychain, UInt32(password.utf8.count), password, true) == errSecSuccess)
        #expect(try AccessControlSnippets.readCredentials(from: keychain, userPassword: nil, reuse: 10) == credentials)
    }
}
