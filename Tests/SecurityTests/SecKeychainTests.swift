import Foundation
import Security
import Testing

/// The desktop keychain's calls, used as code written for macOS uses them: create with a password, add through
/// `kSecUseKeychain`, lock, read attributes but not secrets, unlock, settings, change the password, delete.
/// The suites that open password-locked keychains through the Security module, one at a time:
/// `SecKeychainLockAll` locks every keychain the process opened, so it must not run beside a test using one.
@Suite("Security: password-locked keychains", .serialized)
enum PasswordKeychainSuites {
    /// A new password-locked keychain at a temporary path, made as macOS code makes one (SecKeychainCreate).
    static func createKeychain(_ password: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) throws -> (keychain: SecKeychain, path: String) {
        let path = SecKeychainTests.temporaryPath()
        var created: SecKeychain?
        #expect(SecKeychainCreate(path, UInt32(password.count), password, false, nil, &created) == errSecSuccess, sourceLocation: sourceLocation)
        return (try #require(created, sourceLocation: sourceLocation), path)
    }
}

extension PasswordKeychainSuites {
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

        @Test("generic and internet passwords by their parts: add, find (password copied out and freed), copy content, modify, delete; a locked keychain finds without the password")
        func passwordCalls() throws {
            let path = Self.temporaryPath()
            var keychain: SecKeychain?
            let password = Array("keychain password".utf8)
            #expect(SecKeychainCreate(path, UInt32(password.count), password, false, nil, &keychain) == errSecSuccess)
            defer { _ = SecKeychainDelete(keychain) }
            let service = Array("mail.example.com".utf8).map { CChar(bitPattern: $0) }, account = Array("alice".utf8).map { CChar(bitPattern: $0) }
            let secret = Array("s3cret".utf8)
            var item: SecKeychainItem?
            #expect(SecKeychainAddGenericPassword(keychain, UInt32(service.count), service, UInt32(account.count), account, UInt32(secret.count), secret, &item) == errSecSuccess)
            #expect(SecKeychainAddGenericPassword(keychain, UInt32(service.count), service, UInt32(account.count), account, UInt32(secret.count), secret, nil) == errSecDuplicateItem)

            var length: UInt32 = 0
            var data: UnsafeMutableRawPointer?
            var found: SecKeychainItem?
            #expect(SecKeychainFindGenericPassword(keychain, UInt32(service.count), service, UInt32(account.count), account, &length, &data, &found) == errSecSuccess)
            #expect(length == UInt32(secret.count) && data.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(length))) } == secret)
            #expect(SecKeychainItemFreeContent(nil, data) == errSecSuccess)
            #expect(SecKeychainFindGenericPassword(keychain, 4, "none", 0, nil, &length, &data, nil) == errSecItemNotFound)

            // Copy content: the account and service attributes by tag, and the data.
            var attributes = [SecKeychainAttribute(tag: SecItemAttr.accountItemAttr.rawValue, length: 0, data: nil),
                              SecKeychainAttribute(tag: SecItemAttr.serviceItemAttr.rawValue, length: 0, data: nil),
                              SecKeychainAttribute(tag: SecItemAttr.creationDateItemAttr.rawValue, length: 0, data: nil)]
            let foundItem = try #require(found)
            attributes.withUnsafeMutableBufferPointer { buffer in
                var list = SecKeychainAttributeList(count: 3, attr: buffer.baseAddress)
                var itemClass = SecItemClass.internetPasswordItemClass
                #expect(SecKeychainItemCopyContent(foundItem, &itemClass, &list, &length, &data) == errSecSuccess)
                #expect(itemClass == .genericPasswordItemClass)
                let account = String(decoding: UnsafeRawBufferPointer(start: buffer[0].data, count: Int(buffer[0].length)), as: UTF8.self)
                let service = String(decoding: UnsafeRawBufferPointer(start: buffer[1].data, count: Int(buffer[1].length)), as: UTF8.self)
                #expect(account == "alice" && service == "mail.example.com")
                // A CSSM time, NUL-terminated: "YYYYMMDDhhmmssZ\0", this year's.
                let created = Array(UnsafeRawBufferPointer(start: buffer[2].data, count: Int(buffer[2].length)))
                let year = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: Date()).year!
                #expect(created.count == 16 && created.suffix(2) == [UInt8(ascii: "Z"), 0] && created.prefix(4) == ArraySlice(String(year).utf8))
                for attribute in buffer { free(attribute.data) }
                free(data)
            }

            // Modify: a new label and a new password, through the item reference.
            let label = Array("Mail".utf8)
            let addedItem = try #require(item)
            label.withUnsafeBytes { bytes in
                var attribute = SecKeychainAttribute(tag: SecItemAttr.labelItemAttr.rawValue, length: UInt32(bytes.count), data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
                withUnsafeMutablePointer(to: &attribute) { pointer in
                    var list = SecKeychainAttributeList(count: 1, attr: pointer)
                    let newSecret = Array("n3w".utf8)
                    #expect(SecKeychainItemModifyAttributesAndData(addedItem, &list, UInt32(newSecret.count), newSecret) == errSecSuccess)
                }
            }
            #expect(SecKeychainFindGenericPassword(keychain, UInt32(service.count), service, 0, nil, &length, &data, nil) == errSecSuccess)
            #expect(data.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: Int(length)), as: UTF8.self) } == "n3w")
            free(data)

            // Internet passwords: protocol, port and authentication type take part in the match.
            let server = Array("example.org".utf8).map { CChar(bitPattern: $0) }
            #expect(SecKeychainAddInternetPassword(keychain, UInt32(server.count), server, 0, nil, UInt32(account.count), account, 0, nil, 443, .HTTPS, .HTMLForm, UInt32(secret.count), secret, nil) == errSecSuccess)
            #expect(SecKeychainFindInternetPassword(keychain, UInt32(server.count), server, 0, nil, 0, nil, 0, nil, 0, .any, .any, &length, &data, nil) == errSecSuccess)
            free(data)
            #expect(SecKeychainFindInternetPassword(keychain, UInt32(server.count), server, 0, nil, 0, nil, 0, nil, 443, .HTTP, .any, nil, nil, nil) == errSecItemNotFound)
            var query: [String: Any] = [kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "example.org", kSecReturnAttributes as String: true, kSecUseKeychain as String: try #require(keychain)]
            var result: CFTypeRef?
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
            #expect((result as? NSDictionary)?[kSecAttrProtocol as String] as? String == kSecAttrProtocolHTTPS as String)
            #expect((result as? NSDictionary)?[kSecAttrPort as String] as? Int == 443)

            // Locked: found without its password, refused with it.
            #expect(SecKeychainLock(keychain) == errSecSuccess)
            #expect(SecKeychainFindGenericPassword(keychain, UInt32(service.count), service, 0, nil, nil, nil, &found) == errSecSuccess)
            #expect(SecKeychainFindGenericPassword(keychain, UInt32(service.count), service, 0, nil, &length, &data, nil) == errSecInteractionNotAllowed)
            #expect(SecKeychainItemDelete(try #require(item)) == errSecInteractionNotAllowed)
            #expect(SecKeychainUnlock(keychain, UInt32(password.count), password, true) == errSecSuccess)
            #expect(SecKeychainItemDelete(try #require(item)) == errSecSuccess)
            #expect(SecKeychainItemDelete(try #require(item)) == errSecItemNotFound)
            query[kSecClass as String] = kSecClassGenericPassword
            query[kSecAttrServer as String] = nil
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecItemNotFound)
        }

        @Test("kSecMatchSearchList searches the keychains named, in order, to the limit; a locked one refuses its data; bad members are errSecParam")
        func matchSearchList() throws {
            let password = Array("list password".utf8)
            var first: SecKeychain?, second: SecKeychain?
            let firstPath = Self.temporaryPath(), secondPath = Self.temporaryPath()
            #expect(SecKeychainCreate(firstPath, UInt32(password.count), password, false, nil, &first) == errSecSuccess)
            #expect(SecKeychainCreate(secondPath, UInt32(password.count), password, false, nil, &second) == errSecSuccess)
            defer {
                _ = SecKeychainDelete(first)
                _ = SecKeychainDelete(second)
            }
            let one = try #require(first), two = try #require(second)
            for (keychain, secret) in [(one, "in first"), (two, "in second")] {
                let item: [String: Any] = [
                    kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "shared", kSecAttrService as String: "list",
                    kSecValueData as String: Data(secret.utf8), kSecUseKeychain as String: keychain,
                ]
                #expect(SecItemAdd(item as CFDictionary, nil) == errSecSuccess)
            }
            func search(_ list: [Any], limit: CFString = kSecMatchLimitOne) -> (OSStatus, CFTypeRef?) {
                var result: CFTypeRef?
                let query: [String: Any] = [
                    kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "shared", kSecReturnData as String: true,
                    kSecMatchLimit as String: limit, kSecMatchSearchList as String: list,
                ]
                return (SecItemCopyMatching(query as CFDictionary, &result), result)
            }
            #expect(search([one, two]).1 as? Data == Data("in first".utf8))
            #expect(search([two, one]).1 as? Data == Data("in second".utf8))
            #expect((search([one, two], limit: kSecMatchLimitAll).1 as? [Data]) == [Data("in first".utf8), Data("in second".utf8)])
            #expect(SecKeychainLock(one) == errSecSuccess)
            #expect(search([one, two]).0 == errSecInteractionNotAllowed)
            #expect(search(["not a keychain"]).0 == errSecParam)
            #expect(search([]).0 == errSecParam)
            var list: CFArray?
            #expect(SecKeychainCopyDomainSearchList(.common, &list) == errSecSuccess && list?.count == 0)
            #expect(SecKeychainSetDomainDefault(.dynamic, one) == errSecUnimplemented)
        }
    }
}
