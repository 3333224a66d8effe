import Foundation
import HardwareKeys
import LocalAuthentication
import Security
import Testing
import TestVectors

extension PasswordKeychainSuites {
    /// An enclave key under a constraint on the user, in a password-locked keychain: among the password keychains'
    /// suites, since another's SecKeychainLockAll would lock this one too.
    @Suite("Security: an enclave key (swtpm) asks for the user at each use", .hardwareExclusive)
    struct EnclavePresenceTests {
        let swtpm: SoftwareTPM

        init() throws {
            swtpm = try SoftwareTPM()
            TrustedPlatformModule.shared = TrustedPlatformModule(configuration: swtpm.configuration)
        }

        @Test("an enclave key under .userPresence asks for the user at each use: with the password in the context it signs; locked, or once the unlock's reuse duration has run out, the key in hand is refused")
        func presenceAtEachUse() throws {
            let password = Array("enclave owner".utf8)
            let (keychain, _) = try PasswordKeychainSuites.createKeychain(password)
            defer { _ = SecKeychainDelete(keychain) }
            let tag = Data("com.example.keys.presence".utf8)
            let key = try SecureEnclaveTests.makeEnclaveKey(tag: tag, permanent: false)
            let publicKey = try #require(SecKeyCopyPublicKey(key))
            let access = try #require(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, [.privateKeyUsage, .userPresence], nil))
            let add: [String: Any] = [
                kSecValueRef as String: key, kSecAttrApplicationTag as String: tag, kSecAttrAccessControl as String: access,
                kSecUseKeychain as String: keychain,
            ]
            #expect(SecItemAdd(add as CFDictionary, nil) == errSecSuccess)
            let message = Data("signed while the user is there".utf8) as CFData

            /// The key found with `context`, then a signature with it: its status.
            func found(_ context: LAContext) throws -> SecKey {
                let query: [String: Any] = [
                    kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag, kSecReturnRef as String: true,
                    kSecUseAuthenticationContext as String: context, kSecUseKeychain as String: keychain,
                ]
                var result: CFTypeRef?
                #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
                return result as! SecKey
            }
            func sign(_ key: SecKey) -> OSStatus {
                var error: Unmanaged<CFError>?
                guard let signature = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message, &error) else {
                    return OSStatus(CFErrorGetCode(error!.takeRetainedValue()))
                }
                return SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message, signature, nil) ? errSecSuccess : errSecVerifyFailed
            }

            // The password in the context: the key signs, each time with the password checked.
            let withPassword = LAContext()
            withPassword.setCredential(Data(password), type: .applicationPassword)
            let byPassword = try found(withPassword)
            #expect(sign(byPassword) == errSecSuccess)
            #expect(sign(byPassword) == errSecSuccess)
            // Locked, the key in hand is refused; unlocked again, it signs.
            #expect(SecKeychainLock(keychain) == errSecSuccess)
            #expect(sign(byPassword) == errSecInteractionNotAllowed)
            #expect(SecKeychainUnlock(keychain, UInt32(password.count), password, true) == errSecSuccess)
            #expect(sign(byPassword) == errSecSuccess)

            // Proved by the unlock within a reuse duration: the key signs within it, and not after.
            let byUnlock = LAContext()
            byUnlock.touchIDAuthenticationAllowableReuseDuration = 3
            #expect(SecKeychainUnlock(keychain, UInt32(password.count), password, true) == errSecSuccess)
            let reused = try found(byUnlock)
            #expect(sign(reused) == errSecSuccess)
            Thread.sleep(forTimeInterval: 3.2)
            #expect(sign(reused) == errSecInteractionNotAllowed)
            // The item deleted, the key is gone with it.
            #expect(SecItemDelete([kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag, kSecUseKeychain as String: keychain] as CFDictionary) == errSecSuccess)
            #expect(sign(byPassword) == errSecItemNotFound)
        }
    }
}
