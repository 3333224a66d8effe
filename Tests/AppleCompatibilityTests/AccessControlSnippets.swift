// Apple-platform code, unchanged: the shapes of Apple's "Accessing Keychain Items with Face ID or Touch ID" (an
// internet password under .userPresence, with an LAContext whose reuse duration lets a recent unlock count), and of
// handing the user's password to the keychain with LAContext.setCredential, as a macOS app without a prompt does. It
// imports only what an Apple-platform file imports.
import Foundation
import LocalAuthentication
import Security

public enum AccessControlSnippets {
    public struct Credentials: Equatable {
        public var username: String
        public var password: String

        public init(username: String, password: String) {
            self.username = username
            self.password = password
        }
    }

    public enum KeychainError: Error, Equatable {
        case noPassword
        case unexpectedPasswordData
        case unhandledError(status: OSStatus)
    }

    public static let server = "www.example.com"

    /// "Add the credentials to the keychain, protected by user presence."
    public static func addCredentials(_ credentials: Credentials, to keychain: SecKeychain) throws {
        let access = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, .userPresence, nil)
        let context = LAContext()
        context.touchIDAuthenticationAllowableReuseDuration = 10
        let query: [String: Any] = [
            kSecClass as String: kSecClassInternetPassword,
            kSecAttrAccount as String: credentials.username,
            kSecAttrServer as String: server,
            kSecAttrAccessControl as String: access as Any,
            kSecUseAuthenticationContext as String: context,
            kSecValueData as String: credentials.password.data(using: String.Encoding.utf8)!,
            kSecUseKeychain as String: keychain,
        ]
        let status = SecItemAdd(query as CFDictionary, nil)
        guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
    }

    /// "Read the credentials": with the user's password given to the context (nil: none, as when no one can be
    /// asked), and the reuse duration a recent unlock counts for.
    public static func readCredentials(from keychain: SecKeychain, userPassword: String?, reuse: TimeInterval = 0, failWithoutUI: Bool = false) throws -> Credentials {
        let context = LAContext()
        context.localizedReason = "Access your password on the keychain"
        context.touchIDAuthenticationAllowableReuseDuration = reuse
        if let userPassword {
            context.setCredential(userPassword.data(using: .utf8), type: .applicationPassword)
        }
        var query: [String: Any] = [
            kSecClass as String: kSecClassInternetPassword,
            kSecAttrServer as String: server,
            kSecMatchLimit as String: kSecMatchLimitOne,
            kSecReturnAttributes as String: true,
            kSecUseAuthenticationContext as String: context,
            kSecReturnData as String: true,
            kSecMatchSearchList as String: [keychain],
        ]
        if failWithoutUI { query[kSecUseAuthenticationUI as String] = kSecUseAuthenticationUIFail }
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        guard status != errSecItemNotFound else { throw KeychainError.noPassword }
        guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
        guard let existingItem = item as? [String: Any],
            let passwordData = existingItem[kSecValueData as String] as? Data,
            let password = String(data: passwordData, encoding: String.Encoding.utf8),
            let account = existingItem[kSecAttrAccount as String] as? String
        else {
            throw KeychainError.unexpectedPasswordData
        }
        return Credentials(username: account, password: password)
    }
}
