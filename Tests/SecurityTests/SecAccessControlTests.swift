import Foundation
import Security
import Testing

extension PasswordKeychainSuites {
    /// SecAccessControl as iOS and macOS code uses it: created with Apple's flags, stored with an item, its
    /// accessibility the item's; a constraint that asks for the user is kept in a keychain with a password, whose
    /// unlocking stands for the user.
    @Suite("Security: SecAccessControl")
    struct SecAccessControlTests {
        @Test("SecAccessControlCreateWithFlags: Apple's protections and flags; another protection or an undefined flag is errSecParam in the CFError")
        func create() throws {
            var error: Unmanaged<CFError>?
            let control = try #require(SecAccessControlCreateWithFlags(kCFAllocatorDefault, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, [.userPresence, .or, .devicePasscode], &error))
            #expect(error == nil)
            #expect(CFGetTypeID(control) == SecAccessControlGetTypeID())
            #expect(SecAccessControlCreateWithFlags(nil, "zz" as CFString, [], &error) == nil)
            #expect(CFErrorGetCode(error?.takeRetainedValue()) == Int(errSecParam))
            #expect(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleAfterFirstUnlock, SecAccessControlCreateFlags(rawValue: 1 << 2), &error) == nil)
            #expect(CFErrorGetCode(error?.takeRetainedValue()) == Int(errSecParam))
            #expect(SecAccessControlCreateFlags.biometryAny.rawValue == 2 && SecAccessControlCreateFlags.privateKeyUsage.rawValue == 1 << 30)
        }

        @Test("an item with user presence in a password-locked keychain: stored with its accessibility, returned as a SecAccessControl, its secret refused while locked and given once unlocked; kSecAttrAccessible beside it must agree")
        func userPresence() throws {
            let password = Array("presence password".utf8)
            let keychain = try PasswordKeychainSuites.createKeychain(password).keychain
            defer { _ = SecKeychainDelete(keychain) }
            let control = try #require(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, .userPresence, nil))
            var item: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "presence", kSecAttrAccount as String: "alice",
                kSecValueData as String: Data("needs the user".utf8), kSecAttrAccessControl as String: control, kSecUseKeychain as String: keychain,
                kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock,
            ]
            #expect(SecItemAdd(item as CFDictionary, nil) == errSecParam, "two different accessibilities")
            item[kSecAttrAccessible as String] = nil
            item[kSecAttrAccessControl as String] = "not an access control"
            #expect(SecItemAdd(item as CFDictionary, nil) == errSecParam)
            item[kSecAttrAccessControl as String] = control
            #expect(SecItemAdd(item as CFDictionary, nil) == errSecSuccess)

            var result: CFTypeRef?
            let attributes: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "presence", kSecReturnAttributes as String: true,
                kSecUseKeychain as String: keychain,
            ]
            #expect(SecItemCopyMatching(attributes as CFDictionary, &result) == errSecSuccess)
            let found = try #require(result as? NSDictionary)
            #expect(found[kSecAttrAccessible as String] as? String == kSecAttrAccessibleWhenUnlockedThisDeviceOnly as String)
            let stored = try #require(found[kSecAttrAccessControl as String] as? SecAccessControl)
            #expect(CFGetTypeID(stored) == SecAccessControlGetTypeID())

            var data = attributes
            data[kSecReturnAttributes as String] = nil
            data[kSecReturnData as String] = true
            #expect(SecKeychainLock(keychain) == errSecSuccess)
            #expect(SecItemCopyMatching(data as CFDictionary, &result) == errSecInteractionNotAllowed)
            #expect(SecKeychainUnlock(keychain, UInt32(password.count), password, true) == errSecSuccess)
            #expect(SecItemCopyMatching(data as CFDictionary, &result) == errSecSuccess)
            #expect(result as? Data == Data("needs the user".utf8))
            var search = attributes
            search[kSecReturnAttributes as String] = nil
            search[kSecAttrAccessControl as String] = control
            #expect(SecItemCopyMatching(search as CFDictionary, &result) == errSecParam, "not searchable")
        }
    }
}
