import Foundation
import Security
import Testing

/// Access control lists as macOS code uses them: trusted applications from paths, SecAccessCreate,
/// the ACL entry calls, kSecAttrAccess on SecItemAdd, SecKeychainItemCopyAccess/SetAccess; an application the list
/// does not trust gets errSecInteractionNotAllowed where macOS would ask.
extension PasswordKeychainSuites {
    @Suite("Security: SecAccess, SecACL, SecTrustedApplication")
    struct SecAccessTests {
        static func keychain() throws -> SecKeychain { try PasswordKeychainSuites.createKeychain(Array("access lists".utf8)).keychain }

        static func application(_ path: String?) throws -> SecTrustedApplication {
            var application: SecTrustedApplication?
            let status = path.map { path in path.withCString { SecTrustedApplicationCreateFromPath($0, &application) } }
                ?? SecTrustedApplicationCreateFromPath(nil, &application)
            #expect(status == errSecSuccess)
            return try #require(application)
        }

        static func entries(_ access: SecAccess) throws -> [SecACL] {
            var list: CFArray?
            #expect(SecAccessCopyACLList(access, &list) == errSecSuccess)
            return try #require(list as? [SecACL])
        }

        @Test("trusted applications from paths; SecAccessCreate's entries; reading and changing entries")
        func objects() throws {
            let other = try Self.application("/bin/true")
            var data: CFData?
            #expect(SecTrustedApplicationCopyData(other, &data) == errSecSuccess)
            #expect(data as Data? == Data("/bin/true".utf8) + [0])
            var missing: SecTrustedApplication?
            #expect(SecTrustedApplicationCreateFromPath("/nonexistent/app", &missing) == errSecParam)
            #expect(SecTrustedApplicationSetData(other, Data("/nonexistent/app".utf8) as CFData) == errSecParam)
            #expect(CFGetTypeID(other) == SecTrustedApplicationGetTypeID())

            var created: SecAccess?
            #expect(SecAccessCreate("mail password" as CFString, [other] as CFArray, &created) == errSecSuccess)
            let access = try #require(created)
            #expect(CFGetTypeID(access) == SecAccessGetTypeID())
            let entries = try Self.entries(access)
            #expect(entries.count == 3)
            let decrypting = try #require(SecAccessCopyMatchingACLList(access, kSecACLAuthorizationDecrypt) as? [SecACL])
            #expect(decrypting.count == 1)
            #expect(CFGetTypeID(decrypting[0]) == SecACLGetTypeID())
            var applications: CFArray?
            var description: CFString?
            var selector: SecKeychainPromptSelector = 0xffff
            #expect(SecACLCopyContents(decrypting[0], &applications, &description, &selector) == errSecSuccess)
            #expect((applications as? [SecTrustedApplication])?.count == 1)
            #expect(description as String? == "mail password")
            #expect(selector == 0)
            let authorizations = SecACLCopyAuthorizations(decrypting[0]) as? [String] ?? []
            #expect(authorizations.contains(kSecACLAuthorizationDecrypt as String) && authorizations.contains(kSecACLAuthorizationDelete as String))
            // "encrypt" is open to any application: its entry's list is nil.
            let encrypting = try #require(SecAccessCopyMatchingACLList(access, kSecACLAuthorizationEncrypt) as? [SecACL])
            #expect(SecACLCopyContents(encrypting[0], &applications, &description, &selector) == errSecSuccess)
            #expect(applications == nil)

            var added: SecACL?
            #expect(SecACLCreateWithSimpleContents(access, nil, "any" as CFString, kSecKeychainPromptRequirePassphase, &added) == errSecSuccess)
            let acl = try #require(added)
            #expect((SecACLCopyAuthorizations(acl) as? [String])?.isEmpty == true)
            #expect(SecACLUpdateAuthorizations(acl, ["not an authorization"] as CFArray) == errSecParam)
            #expect(SecACLUpdateAuthorizations(acl, [kSecACLAuthorizationAny] as CFArray) == errSecSuccess)
            #expect(try Self.entries(access).count == 4)
            #expect(SecACLRemove(acl) == errSecSuccess)
            #expect(SecACLRemove(acl) == errSecParam)
            #expect(try Self.entries(access).count == 3)
            #expect(SecAccessCopyMatchingACLList(access, "no such tag" as CFString) == nil)
        }

        @Test("an item whose list trusts another application: attributes yes, secret and delete errSecInteractionNotAllowed; the owner changes the list and then reads; a list that no longer names this process as owner cannot be changed by it")
        func enforcement() throws {
            let keychain = try Self.keychain()
            let other = try Self.application("/bin/true")
            let this = try Self.application(nil)
            var created: SecAccess?
            #expect(SecAccessCreate("alice" as CFString, [other] as CFArray, &created) == errSecSuccess)
            let access = try #require(created)
            let item: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "alice", kSecAttrService as String: "acl",
                kSecValueData as String: Data("alice-secret".utf8), kSecUseKeychain as String: keychain, kSecAttrAccess as String: access,
            ]
            #expect(SecItemAdd(item as CFDictionary, nil) == errSecSuccess)
            var notAccess = item
            notAccess[kSecAttrAccount as String] = "bob"
            notAccess[kSecAttrAccess as String] = "a string"
            #expect(SecItemAdd(notAccess as CFDictionary, nil) == errSecParam)

            let query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "alice", kSecUseKeychain as String: keychain,
            ]
            var result: CFTypeRef?
            var dataQuery = query
            dataQuery[kSecReturnData as String] = true
            #expect(SecItemCopyMatching(dataQuery as CFDictionary, &result) == errSecInteractionNotAllowed)
            var attributesQuery = query
            attributesQuery[kSecReturnAttributes as String] = true
            #expect(SecItemCopyMatching(attributesQuery as CFDictionary, &result) == errSecSuccess)
            #expect((result as? NSDictionary)?[kSecAttrAccess as String] is SecAccess)
            #expect(SecItemDelete(query as CFDictionary) == errSecInteractionNotAllowed)

            // The desktop calls: the item without its password, then its list.
            var itemRef: SecKeychainItem?
            var length: UInt32 = 0
            var password: UnsafeMutableRawPointer?
            #expect(SecKeychainFindGenericPassword(keychain, 3, "acl", 5, "alice", &length, &password, &itemRef) == errSecInteractionNotAllowed)
            #expect(SecKeychainFindGenericPassword(keychain, 3, "acl", 5, "alice", nil, nil, &itemRef) == errSecSuccess)
            let found = try #require(itemRef)
            var copied: SecAccess?
            #expect(SecKeychainItemCopyAccess(found, &copied) == errSecSuccess)
            let stored = try #require(copied)
            #expect(try Self.entries(stored).count == 3)

            // SecAccessCreate made this process the owner: it may trust itself, and then reads.
            let decrypting = try #require(SecAccessCopyMatchingACLList(stored, kSecACLAuthorizationDecrypt) as? [SecACL])
            #expect(SecACLSetContents(decrypting[0], [other, this] as CFArray, "alice" as CFString, 0) == errSecSuccess)
            #expect(SecKeychainItemSetAccess(found, stored) == errSecSuccess)
            #expect(SecKeychainFindGenericPassword(keychain, 3, "acl", 5, "alice", &length, &password, nil) == errSecSuccess)
            #expect(Data(bytes: password!, count: Int(length)) == Data("alice-secret".utf8))
            #expect(SecKeychainItemFreeContent(nil, password) == errSecSuccess)

            // Handing the list over to the other application: this process can no longer change it.
            let owning = try #require(SecAccessCopyMatchingACLList(stored, kSecACLAuthorizationChangeACL) as? [SecACL])
            #expect(SecACLSetContents(owning[0], [other] as CFArray, "alice" as CFString, 0) == errSecSuccess)
            #expect(SecKeychainItemSetAccess(found, stored) == errSecSuccess)
            #expect(SecKeychainItemSetAccess(found, stored) == errSecInteractionNotAllowed)
            #expect(SecItemDelete(query as CFDictionary) == errSecSuccess, "this process is still trusted to delete")
        }

        @Test("an item without a list: SecKeychainItemCopyAccess says errSecNoAccessForItem; kSecAttrAccess is not searchable")
        func noList() throws {
            let keychain = try Self.keychain()
            var itemRef: SecKeychainItem?
            let secret = Array("plain".utf8)
            #expect(SecKeychainAddGenericPassword(keychain, 3, "acl", 3, "bob", UInt32(secret.count), secret, &itemRef) == errSecSuccess)
            var access: SecAccess?
            #expect(SecKeychainItemCopyAccess(try #require(itemRef), &access) == errSecNoAccessForItem)
            #expect(access == nil)
            var created: SecAccess?
            #expect(SecAccessCreate("x" as CFString, nil, &created) == errSecSuccess)
            let query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccess as String: try #require(created), kSecUseKeychain as String: keychain,
            ]
            var result: CFTypeRef?
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecParam)
        }
    }
}
