import Foundation
import Security
import TestVectors
import Testing

/// Apple-platform code compiled unchanged (KeychainWrapper.swift), run against this keychain.
@Suite("Apple-platform code: a keychain wrapper, unchanged", .isolatedKeychain(["com.example.wrapper"]))
struct KeychainWrapperTests {
    @Test("set, get, list and remove, synchronizable and not; status messages through SecCopyErrorMessageString")
    func roundTrip() throws {
        let local = KeychainWrapper(service: "compat")
        let synced = KeychainWrapper(service: "compat", synchronizable: true)
        try local.set("local secret", for: "alice")
        try synced.set("synced secret", for: "bob")
        #expect(try local.get("alice") == "local secret")
        #expect(try local.get("bob") == "synced secret", "kSecAttrSynchronizableAny finds the synchronizable item")
        #expect(try local.get("nobody") == nil)
        let accounts = try local.allAccounts()
        #expect(accounts.map(\.account) == ["alice", "bob"] && accounts.map(\.synchronizable) == [false, true])
        try local.set("replaced", for: "alice")
        #expect(try local.get("alice") == "replaced")
        try local.remove("alice")
        try synced.remove("bob")
        #expect(try local.allAccounts().isEmpty)
        // A group the caller lacks: the status and Apple's message come back through the wrapper's error.
        #expect(throws: KeychainWrapperError.unhandled(errSecMissingEntitlement, "A required entitlement isn't present.")) {
            try KeychainWrapper(service: "compat", accessGroup: "com.example.other").set("x", for: "carol")
        }
    }

    @Test("a wrapper that keeps the last status in an OSStatus property starting as noErr compiles and reports each call")
    func lastResultCode() {
        let keychain = StatusKeepingKeychain(service: "compat-status")
        #expect(keychain.lastResultCode == noErr)
        #expect(keychain.set("secret", forKey: "alice") && keychain.lastResultCode == noErr)
        #expect(keychain.get("alice") == "secret")
        #expect(keychain.get("nobody") == nil && keychain.lastResultCode == errSecItemNotFound)
        #expect(keychain.delete("alice") && !keychain.delete("alice") && keychain.lastResultCode == errSecItemNotFound)
        let status: OSStatus = noErr
        #expect(status == errSecSuccess)
    }

    @Test("user presence needs a keychain with a password here: the add is errSecAuthFailed, and nothing is stored")
    func userPresence() throws {
        let wrapper = KeychainWrapper(service: "compat-presence")
        #expect(throws: KeychainWrapperError.unhandled(errSecAuthFailed, SecCopyErrorMessageString(errSecAuthFailed, nil)! as String)) {
            try wrapper.set("needs the user", for: "alice", userPresence: true)
        }
        #expect(try wrapper.get("alice") == nil)
    }
}
