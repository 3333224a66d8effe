import Foundation
import Security
import Testing

/// The desktop keychain's calls, used as code written for macOS uses them: create with a password, add through
/// `kSecUseKeychain`, lock, read attributes but not secrets, unlock, settings, change the password, delete.
@Suite("Security: SecKeychain (password-locked keychains)")
struct SecKeychainTests {
    static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("seckc-\(UUID().uuidString).keychain-db").path
    }

    @Test("create, add with kSecUseKeychain, lock, status, attributes readable and data errSecInteractionNotAllowed, unlock, change password, delete")
    func lifecycle() throws {
        let path = Self.temporaryPath()
        var keychain: SecKeychain?
        let password = Array("hunter2 but longer".utf8)
        #expect(SecKeychainCreate(path, UInt32(password.count), password, false, nil, &keychain) == errSecSuccess)
        let created = try #require(keychain)
        var again: SecKeychain?
        #expect(SecKeychainCreate(path, UInt32(password.count), password, false, nil, &again) == errSecDuplicateKeychain)
        #expect(SecKeychainCreate(Self.temporaryPath(), 0, nil, true, nil, &again) == errSecInteractionNotAllowed)

        let item: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "alice", kSecAttrService as String: "mail",
            kSecValueData as String: Data("alice-secret".utf8), kSecUseKeychain as String: created,
        ]
        #expect(SecItemAdd(item as CFDictionary, nil) == errSecSuccess)
        var status: SecKeychainStatus = 0
        #expect(SecKeychainGetStatus(created, &status) == errSecSuccess)
        #expect(status == kSecUnlockStateStatus | kSecReadPermStatus | kSecWritePermStatus)

        #expect(SecKeychainLock(created) == errSecSuccess)
        #expect(SecKeychainGetStatus(created, &status) == errSecSuccess)
        #expect(status == kSecReadPermStatus)
        var result: CFTypeRef?
        let attributesQuery: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "alice", kSecReturnAttributes as String: true,
            kSecUseKeychain as String: created,
        ]
        #expect(SecItemCopyMatching(attributesQuery as CFDictionary, &result) == errSecSuccess)
        #expect((result as? NSDictionary)?[kSecAttrService as String] as? String == "mail")
        var dataQuery = attributesQuery
        dataQuery[kSecReturnAttributes as String] = nil
        dataQuery[kSecReturnData as String] = true
        #expect(SecItemCopyMatching(dataQuery as CFDictionary, &result) == errSecInteractionNotAllowed)
        #expect(SecItemDelete([kSecClass as String: kSecClassGenericPassword, kSecUseKeychain as String: created] as CFDictionary) == errSecInteractionNotAllowed)

        let wrong = Array("wrong".utf8)
        #expect(SecKeychainUnlock(created, UInt32(wrong.count), wrong, true) == errSecAuthFailed)
        #expect(SecKeychainUnlock(created, 0, nil, false) == errSecInteractionNotAllowed)
        // Opened anew, as another part of the program would: the same lock state.
        var opened: SecKeychain?
        #expect(SecKeychainOpen(path, &opened) == errSecSuccess)
        #expect(SecKeychainUnlock(opened, UInt32(password.count), password, true) == errSecSuccess)
        #expect(SecItemCopyMatching(dataQuery as CFDictionary, &result) == errSecSuccess)
        #expect(result as? Data == Data("alice-secret".utf8))

        var settings = SecKeychainSettings()
        #expect(SecKeychainCopySettings(created, &settings) == errSecSuccess)
        #expect(settings.useLockInterval && settings.lockInterval == 300, "the default: five minutes idle")
        settings.lockInterval = 60
        settings.lockOnSleep = true
        #expect(SecKeychainSetSettings(created, &settings) == errSecSuccess)
        var read = SecKeychainSettings()
        #expect(SecKeychainCopySettings(opened, &read) == errSecSuccess)
        #expect(read == settings)
        settings.lockInterval = 0
        #expect(SecKeychainSetSettings(created, &settings) == errSecParam)

        let newPassword = Array("correct horse battery".utf8)
        #expect(SecKeychainChangePassword(created, UInt32(wrong.count), wrong, UInt32(newPassword.count), newPassword) == errSecAuthFailed)
        #expect(SecKeychainChangePassword(created, UInt32(password.count), password, UInt32(newPassword.count), newPassword) == errSecSuccess)
        #expect(SecKeychainLockAll() == errSecSuccess)
        #expect(SecKeychainGetStatus(created, &status) == errSecSuccess && status == kSecReadPermStatus)
        #expect(SecKeychainUnlock(created, UInt32(password.count), password, true) == errSecAuthFailed)
        #expect(SecKeychainUnlock(created, UInt32(newPassword.count), newPassword, true) == errSecSuccess)

        var length = UInt32(4)
        var buffer = [CChar](repeating: 0, count: 4096)
        #expect(SecKeychainGetPath(created, &length, &buffer) == errSecBufferTooSmall)
        length = UInt32(buffer.count)
        #expect(SecKeychainGetPath(created, &length, &buffer) == errSecSuccess)
        let written = buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }
        #expect(String(decoding: written, as: UTF8.self) == path && buffer[Int(length)] == 0)

        #expect(SecKeychainDelete(created) == errSecSuccess)
        #expect(!FileManager.default.fileExists(atPath: path) && !FileManager.default.fileExists(atPath: path + ".key"))
        #expect(SecKeychainDelete(created) == errSecNoSuchKeychain)
        #expect(SecKeychainOpen(path, &opened) == errSecNoSuchKeychain)
        #expect(SecKeychainDelete(nil) == errSecInvalidKeychain)
    }
}
