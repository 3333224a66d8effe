import Foundation
import Keychain
import LocalAuthentication
import Security
import Testing

extension PasswordKeychainSuites {
    /// SecAccessControl as iOS and macOS code uses it: created with Apple's flags, stored with an item, its
    /// accessibility the item's; a constraint that asks for the user is kept in a keychain with a password, and its
    /// secret is read only with the proof of the user: the keychain's password in an LAContext, or an unlock within
    /// the context's reuse duration.
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
            // What only biometry or a companion device satisfies cannot be had here: refused at creation, not kept
            // and ignored. An alternative a password satisfies makes it possible.
            for flags: SecAccessControlCreateFlags in [.biometryAny, .biometryCurrentSet, [.biometryAny, .and, .devicePasscode], .companion, [.biometryAny, .or, .companion]] {
                #expect(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, flags, &error) == nil, "\(flags)")
                #expect(CFErrorGetCode(error?.takeRetainedValue()) == Int(errSecUnimplemented))
            }
            for flags: SecAccessControlCreateFlags in [[.biometryAny, .or, .devicePasscode], .devicePasscode, .userPresence, .applicationPassword, .privateKeyUsage, []] {
                #expect(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, flags, nil) != nil, "\(flags)")
            }
        }

        @Test("Apple's documented shape: .userPresence with an LAContext; kSecUseAuthenticationUI fail and skip; a wrong credential is errSecAuthFailed; an unlock counts within touchIDAuthenticationAllowableReuseDuration; attributes need no proof")
        func documentedUserPresence() throws {
            let password = Array("the user's password".utf8)
            let (keychain, path) = try PasswordKeychainSuites.createKeychain(password)
            defer { _ = SecKeychainDelete(keychain) }
            let server = "www.example.com"

            // Adding: as Apple's "Accessing Keychain Items with Face ID or Touch ID" does.
            let access = try #require(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, .userPresence, nil))
            let context = LAContext()
            context.touchIDAuthenticationAllowableReuseDuration = 10
            let add: [String: Any] = [
                kSecClass as String: kSecClassInternetPassword, kSecAttrAccount as String: "appleseed", kSecAttrServer as String: server,
                kSecAttrAccessControl as String: access as Any, kSecUseAuthenticationContext as String: context,
                kSecValueData as String: Data("in hardware, elsewhere".utf8), kSecUseKeychain as String: keychain,
            ]
            #expect(SecItemAdd(add as CFDictionary, nil) == errSecSuccess)
            let plain: [String: Any] = [
                kSecClass as String: kSecClassInternetPassword, kSecAttrAccount as String: "other", kSecAttrServer as String: server,
                kSecValueData as String: Data("no constraint".utf8), kSecUseKeychain as String: keychain,
            ]
            #expect(SecItemAdd(plain as CFDictionary, nil) == errSecSuccess)

            // Reading it back: with the context, no proof yet (the keychain was created, not unlocked with its password).
            var query: [String: Any] = [
                kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: server, kSecAttrAccount as String: "appleseed",
                kSecMatchLimit as String: kSecMatchLimitOne, kSecReturnAttributes as String: true,
                kSecUseAuthenticationContext as String: context, kSecReturnData as String: true, kSecUseKeychain as String: keychain,
            ]
            var item: CFTypeRef?
            #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecInteractionNotAllowed)
            query[kSecUseAuthenticationUI as String] = kSecUseAuthenticationUIFail
            #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecInteractionNotAllowed)
            // Skip: the item is left out, the unconstrained one still found.
            query[kSecUseAuthenticationUI as String] = kSecUseAuthenticationUISkip
            #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecItemNotFound)
            var all = query
            all[kSecAttrAccount as String] = nil
            all[kSecMatchLimit as String] = kSecMatchLimitAll
            #expect(SecItemCopyMatching(all as CFDictionary, &item) == errSecSuccess)
            #expect((item as? [[String: Any]])?.compactMap { $0[kSecAttrAccount as String] as? String } == ["other"])
            query[kSecUseAuthenticationUI as String] = nil
            // The attributes alone need no proof.
            var attributes = query
            attributes[kSecReturnData as String] = nil
            #expect(SecItemCopyMatching(attributes as CFDictionary, &item) == errSecSuccess)

            // A wrong credential, then the right one.
            context.setCredential(Data("guess".utf8), type: .applicationPassword)
            #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecAuthFailed)
            #expect(context.isCredentialSet(.applicationPassword))
            context.setCredential(Data(password), type: .applicationPassword)
            #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess)
            #expect((item as? [String: Any])?[kSecValueData as String] as? Data == Data("in hardware, elsewhere".utf8))

            // Without a credential, an unlock with the password proves the user within the reuse duration.
            context.setCredential(nil, type: .applicationPassword)
            #expect(SecKeychainLock(keychain) == errSecSuccess)
            #expect(SecKeychainUnlock(keychain, UInt32(password.count), password, true) == errSecSuccess)
            #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess)
            let noReuse = LAContext()
            query[kSecUseAuthenticationContext as String] = noReuse
            #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecInteractionNotAllowed)
            // Not an LAContext: a parameter error.
            query[kSecUseAuthenticationContext as String] = "context"
            #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecParam)
            // An invalidated context proves nothing.
            context.invalidate()
            query[kSecUseAuthenticationContext as String] = context
            #expect(!context.setCredential(Data(password), type: .applicationPassword))
            #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecInteractionNotAllowed)
            _ = path
        }

        @Test("LAContext policies: the device owner is the default keychain's password, given as the credential; biometry never; without a credential no one can be asked")
        func policies() async throws {
            let password = Array("owner".utf8)
            let (keychain, path) = try PasswordKeychainSuites.createKeychain(password)
            defer { _ = SecKeychainDelete(keychain) }
            let store = try KeychainStore(path: path, accessGroups: ["test"])
            try await KeychainDefaults.withStore(store) { () async throws in
                let context = LAContext()
                var error: NSError?
                #expect(context.canEvaluatePolicy(.deviceOwnerAuthentication, error: &error))
                #expect(!context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
                #expect(error?.code == LAError.Code.biometryNotAvailable.rawValue && error?.domain == LAErrorDomain)
                #expect(context.biometryType == .none)
                await #expect(throws: LAError(.notInteractive)) { try await context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "test") }
                context.setCredential(Data("wrong".utf8), type: .applicationPassword)
                await #expect(throws: LAError(.authenticationFailed)) { try await context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "test") }
                context.setCredential(Data(password), type: .applicationPassword)
                #expect(try await context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "test"))
                await #expect(throws: LAError(.biometryNotAvailable)) { try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "test") }
                context.invalidate()
                await #expect(throws: LAError(.invalidContext)) { try await context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "test") }
            }
            // A default keychain without a password has no owner's password to check.
            let plainPath = SecKeychainTests.temporaryPath()
            let plain = try KeychainStore(path: plainPath, accessGroups: ["test"])
            defer { for suffix in ["", "-wal", "-shm", ".key"] { unlink(plainPath + suffix) } }
            await KeychainDefaults.withStore(plain) { () async in
                var error: NSError?
                #expect(!LAContext().canEvaluatePolicy(.deviceOwnerAuthentication, error: &error))
                #expect(error?.code == LAError.Code.passcodeNotSet.rawValue)
            }
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
            // Unlocked, the secret still asks for the user.
            #expect(SecItemCopyMatching(data as CFDictionary, &result) == errSecInteractionNotAllowed)
            let context = LAContext()
            context.setCredential(Data(password), type: .applicationPassword)
            data[kSecUseAuthenticationContext as String] = context
            #expect(SecItemCopyMatching(data as CFDictionary, &result) == errSecSuccess)
            #expect(result as? Data == Data("needs the user".utf8))
            var search = attributes
            search[kSecReturnAttributes as String] = nil
            search[kSecAttrAccessControl as String] = control
            #expect(SecItemCopyMatching(search as CFDictionary, &result) == errSecParam, "not searchable")
        }
    }
}
