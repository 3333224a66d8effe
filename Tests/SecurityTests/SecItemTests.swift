import Foundation
import Keychain
import Security
import TestVectors
import Testing

/// Keychain Services as an Apple-platform client uses it: dictionaries, `as CFDictionary`, `OSStatus`.
/// Each test has a default keychain of its own (`.isolatedKeychain`).
@Suite("Security: SecItem", .isolatedKeychain(["com.example.app", "com.example.shared"]))
struct SecItemTests {
    func addPassword(_ account: String, _ service: String, _ secret: String, extra: [String: Any] = [:]) -> OSStatus {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrAccount as String: account,
            kSecAttrService as String: service,
            kSecValueData as String: secret.data(using: .utf8)!,
        ]
        query.merge(extra) { $1 }
        return SecItemAdd(query as CFDictionary, nil)
    }

    @Test("constants carry Apple's string values and status codes Apple's numbers and messages")
    func constants() {
        #expect(kSecClass as String == "class")
        #expect(kSecClassGenericPassword as String == "genp")
        #expect(kSecClassInternetPassword as String == "inet")
        #expect(kSecClassCertificate as String == "cert")
        #expect(kSecClassKey as String == "keys")
        #expect(kSecClassIdentity as String == "idnt")
        #expect(kSecValueData as String == "v_Data")
        #expect(kSecValuePersistentRef as String == "v_PersistentRef")
        #expect(kSecAttrAccount as String == "acct")
        #expect(kSecAttrService as String == "svce")
        #expect(kSecAttrAccessGroup as String == "agrp")
        #expect(kSecAttrSynchronizableAny as String == "syna")
        #expect(kSecMatchLimit as String == "m_Limit")
        #expect(kSecMatchLimitAll as String == "m_LimitAll")
        #expect(kSecReturnAttributes as String == "r_Attributes")
        #expect(kSecAttrAccessibleAfterFirstUnlock as String == "ck")
        #expect(kSecAttrProtocolHTTPS as String == "htps")
        #expect(errSecSuccess == 0 && errSecParam == -50 && errSecDuplicateItem == -25299 && errSecItemNotFound == -25300)
        #expect(errSecDecode == -26275 && errSecMissingEntitlement == -34018 && errSecNoSuchAttr == -25303)
        #expect(SecCopyErrorMessageString(errSecItemNotFound, nil) as String? == "The specified item could not be found in the keychain.")
        #expect(SecCopyErrorMessageString(errSecDuplicateItem, nil) as String? == "The specified item already exists in the keychain.")
        #expect(SecCopyErrorMessageString(-99_999, nil) as String? == "OSStatus -99999")
    }

    @Test("add, then CopyMatching with each return type gives Apple's shapes")
    func shapes() throws {
        #expect(addPassword("alice", "mail", "s3cret") == errSecSuccess)
        let base: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "alice", kSecAttrService as String: "mail"]
        var result: CFTypeRef?

        // No return key: success, no result.
        #expect(SecItemCopyMatching(base as CFDictionary, &result) == errSecSuccess)
        #expect(result == nil)

        // One return key: the value itself.
        #expect(SecItemCopyMatching(base.merging([kSecReturnData as String: true]) { $1 } as CFDictionary, &result) == errSecSuccess)
        #expect(result as? Data == "s3cret".data(using: .utf8))

        #expect(SecItemCopyMatching(base.merging([kSecReturnAttributes as String: kCFBooleanTrue as Any]) { $1 } as CFDictionary, &result) == errSecSuccess)
        let attributes = try #require(result as? [String: Any])
        #expect(attributes[kSecAttrAccount as String] as? String == "alice")
        #expect(attributes[kSecAttrAccessGroup as String] as? String == "com.example.app")
        #expect(attributes[kSecClass as String] as? String == "genp")
        #expect(attributes[kSecAttrModificationDate as String] is Date)
        #expect(attributes[kSecValueData as String] == nil)

        #expect(SecItemCopyMatching(base.merging([kSecReturnPersistentRef as String: true]) { $1 } as CFDictionary, &result) == errSecSuccess)
        let reference = try #require(result as? Data)

        #expect(SecItemCopyMatching(base.merging([kSecReturnRef as String: true]) { $1 } as CFDictionary, &result) == errSecSuccess)
        #expect(result is SecKeychainItem)

        // Several: one dictionary with the attributes and v_Data / v_PersistentRef.
        let both = base.merging([kSecReturnData as String: true, kSecReturnAttributes as String: true, kSecReturnPersistentRef as String: true]) { $1 }
        #expect(SecItemCopyMatching(both as CFDictionary, &result) == errSecSuccess)
        let dictionary = try #require(result as? [String: Any])
        #expect(dictionary[kSecValueData as String] as? Data == "s3cret".data(using: .utf8))
        #expect(dictionary[kSecValuePersistentRef as String] as? Data == reference)
        #expect(dictionary[kSecAttrService as String] as? String == "mail")

        // Limit all: an array, even of one.
        #expect(SecItemCopyMatching(base.merging([kSecReturnData as String: true, kSecMatchLimit as String: kSecMatchLimitAll]) { $1 } as CFDictionary, &result) == errSecSuccess)
        #expect((result as? [Data]) == ["s3cret".data(using: .utf8)!])
        #expect(SecItemCopyMatching(both.merging([kSecMatchLimit as String: 5]) { $1 } as CFDictionary, &result) == errSecSuccess)
        #expect((result as? [[String: Any]])?.count == 1)

        // By persistent reference, without a class.
        #expect(SecItemCopyMatching([kSecValuePersistentRef as String: reference, kSecReturnData as String: true] as CFDictionary, &result) == errSecSuccess)
        #expect(result as? Data == "s3cret".data(using: .utf8))

        // Add returns the new item when asked.
        let added: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "bob", kSecValueData as String: Data([1]), kSecReturnPersistentRef as String: true]
        #expect(SecItemAdd(added as CFDictionary, &result) == errSecSuccess)
        #expect((result as? Data)?.isEmpty == false)
    }

    @Test("status codes: duplicate, not found, update collisions, delete of every match")
    func statuses() {
        #expect(addPassword("alice", "mail", "one") == errSecSuccess)
        #expect(addPassword("alice", "mail", "two") == errSecDuplicateItem)
        #expect(addPassword("bob", "mail", "three") == errSecSuccess)
        let alice = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "alice"] as CFDictionary
        let carol = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "carol"] as CFDictionary
        #expect(SecItemUpdate(alice, [kSecValueData as String: Data("uno".utf8)] as CFDictionary) == errSecSuccess)
        #expect(SecItemUpdate(carol, [kSecValueData as String: Data("x".utf8)] as CFDictionary) == errSecItemNotFound)
        #expect(SecItemUpdate(alice, [kSecAttrAccount as String: "bob"] as CFDictionary) == errSecDuplicateItem)
        var result: CFTypeRef?
        let read = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "alice", kSecReturnData as String: true] as CFDictionary
        #expect(SecItemCopyMatching(read, &result) == errSecSuccess)
        #expect(result as? Data == Data("uno".utf8))
        #expect(SecItemCopyMatching(carol, &result) == errSecItemNotFound)
        #expect(result == nil)
        let mail = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "mail"] as CFDictionary
        #expect(SecItemDelete(mail) == errSecSuccess)
        #expect(SecItemDelete(mail) == errSecItemNotFound)
    }

    @Test("bad dictionaries are errSecParam (or Apple's specific code) and change nothing")
    func badInput() {
        #expect(addPassword("alice", "mail", "one") == errSecSuccess)
        let cases: [(String, [String: Any], OSStatus)] = [
            ("no class", [kSecAttrAccount as String: "x"], errSecParam),
            ("unknown key", [kSecClass as String: kSecClassGenericPassword, "zzzz": "x"], errSecParam),
            ("wrong type", [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: 42], errSecParam),
            ("data as a string", [kSecClass as String: kSecClassGenericPassword, kSecValueData as String: "text"], errSecParam),
            ("unknown class", [kSecClass as String: "nope"], errSecNoSuchClass),
            ("foreign attribute", [kSecClass as String: kSecClassGenericPassword, kSecAttrServer as String: "example.com"], errSecNoSuchAttr),
            ("a match limit in an add", [kSecClass as String: kSecClassGenericPassword, kSecMatchLimit as String: kSecMatchLimitAll], errSecParam),
            ("another's access group", [kSecClass as String: kSecClassGenericPassword, kSecAttrAccessGroup as String: "com.other"], errSecMissingEntitlement),
        ]
        for (name, query, status) in cases {
            #expect(SecItemAdd(query as CFDictionary, nil) == status, "\(name)")
        }
        let nonStringKey = NSDictionary(dictionary: [NSNumber(value: 1): "x", "class": "genp"])
        #expect(SecItemAdd(nonStringKey, nil) == errSecParam)
        var result: CFTypeRef?
        let badLimit = [kSecClass as String: kSecClassGenericPassword, kSecMatchLimit as String: "m_LimitSome"] as CFDictionary
        #expect(SecItemCopyMatching(badLimit, &result) == errSecParam)
        let folded = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "ALICE", kSecMatchCaseInsensitive as String: true] as CFDictionary
        #expect(SecItemUpdate(folded, [kSecValueData as String: Data()] as CFDictionary) == errSecParam)
        #expect(SecItemDelete(folded) == errSecParam)
        #expect(SecItemCopyMatching(folded, &result) == errSecSuccess)
        let returnInUpdate = [kSecClass as String: kSecClassGenericPassword, kSecReturnData as String: true] as CFDictionary
        #expect(SecItemUpdate(returnInUpdate, [kSecAttrLabel as String: "x"] as CFDictionary) == errSecParam)
        let alice = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "alice"] as CFDictionary
        #expect(SecItemUpdate(alice, [kSecClass as String: kSecClassInternetPassword] as CFDictionary) == errSecParam)
        #expect(SecItemCopyMatching([kSecClass as String: kSecClassGenericPassword, kSecMatchPolicy as String: "x"] as CFDictionary, &result) == errSecUnimplemented)
        // Nothing changed: alice is still the one item, with her secret.
        let all = [kSecClass as String: kSecClassGenericPassword, kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnData as String: true] as CFDictionary
        #expect(SecItemCopyMatching(all, &result) == errSecSuccess)
        #expect((result as? [Data]) == [Data("one".utf8)])
    }

    @Test("synchronizable: default non-synchronizable only, kSecAttrSynchronizableAny both")
    func synchronizable() {
        #expect(addPassword("a", "s", "local") == errSecSuccess)
        #expect(addPassword("a", "s", "synced", extra: [kSecAttrSynchronizable as String: true]) == errSecSuccess)
        var result: CFTypeRef?
        let base: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnData as String: true]
        #expect(SecItemCopyMatching(base as CFDictionary, &result) == errSecSuccess)
        #expect((result as? [Data]) == [Data("local".utf8)])
        #expect(SecItemCopyMatching(base.merging([kSecAttrSynchronizable as String: kSecAttrSynchronizableAny]) { $1 } as CFDictionary, &result) == errSecSuccess)
        #expect((result as? [Data])?.count == 2)
        #expect(SecItemDelete([kSecClass as String: kSecClassGenericPassword, kSecAttrSynchronizable as String: kSecAttrSynchronizableAny] as CFDictionary) == errSecSuccess)
        #expect(SecItemCopyMatching(base.merging([kSecAttrSynchronizable as String: kSecAttrSynchronizableAny]) { $1 } as CFDictionary, &result) == errSecItemNotFound)
    }

    @Test("kSecMatchCaseInsensitive really works in CopyMatching")
    func caseInsensitive() {
        #expect(addPassword("Alice@Example.com", "Mail", "pw") == errSecSuccess)
        var result: CFTypeRef?
        let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "alice@example.COM", kSecReturnData as String: true]
        #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecItemNotFound)
        #expect(SecItemCopyMatching(query.merging([kSecMatchCaseInsensitive as String: true]) { $1 } as CFDictionary, &result) == errSecSuccess)
        #expect(result as? Data == Data("pw".utf8))
    }

    @Test("a reference from kSecReturnRef names its item in a delete")
    func references() throws {
        #expect(addPassword("alice", "mail", "pw") == errSecSuccess)
        var result: CFTypeRef?
        let query = [kSecClass as String: kSecClassGenericPassword, kSecReturnRef as String: true] as CFDictionary
        #expect(SecItemCopyMatching(query, &result) == errSecSuccess)
        let item = try #require(result as? SecKeychainItem)
        #expect(item.itemClass == "genp" && item.data == NSData(data: Data("pw".utf8)))
        #expect(SecItemDelete([kSecValueRef as String: item] as CFDictionary) == errSecSuccess)
        #expect(SecItemCopyMatching(query, &result) == errSecItemNotFound)
    }

    @Test("SecRandomCopyBytes fills the buffer and checks its arguments")
    func random() {
        var a = [UInt8](repeating: 0, count: 64), b = [UInt8](repeating: 0, count: 64)
        #expect(SecRandomCopyBytes(kSecRandomDefault, a.count, &a) == errSecSuccess)
        #expect(SecRandomCopyBytes(kSecRandomDefault, b.count, &b) == errSecSuccess)
        #expect(a != b && a != [UInt8](repeating: 0, count: 64))
        #expect(SecRandomCopyBytes(kSecRandomDefault, 8, nil) == errSecParam)
        #expect(SecRandomCopyBytes(kSecRandomDefault, 0, nil) == errSecSuccess)
    }
}

/// The process-wide default keychain, with no configuration: the only suite that uses it (the others have
/// keychains of their own per test).
@Suite("Security: the default keychain")
struct SecItemDefaultsTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secdefaults-\(UUID().uuidString)")

    func addPassword(_ account: String, _ service: String, _ secret: String) -> OSStatus {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: account,
            kSecAttrService as String: service, kSecValueData as String: Data(secret.utf8),
        ]
        return SecItemAdd(query as CFDictionary, nil)
    }

    @Test("with no configuration: a keychain under $XDG_DATA_HOME, created on first use, and the executable's group")
    func defaults() throws {
        let data = directory.appendingPathComponent("xdg-data")
        setenv("XDG_DATA_HOME", data.path, 1)
        defer { unsetenv("XDG_DATA_HOME") }
        KeychainDefaults.configure(path: nil, accessGroups: nil)
        defer { KeychainDefaults.configure(path: nil, accessGroups: nil) }
        #expect(KeychainDefaults.path == data.path + "/securityservices/keychain.db")
        #expect(addPassword("alice", "mail", "pw") == errSecSuccess)
        #expect(FileManager.default.fileExists(atPath: KeychainDefaults.path))
        #expect(FileManager.default.fileExists(atPath: KeychainDefaults.path + ".key"))
        var result: CFTypeRef?
        let query = [kSecClass as String: kSecClassGenericPassword, kSecReturnAttributes as String: true] as CFDictionary
        #expect(SecItemCopyMatching(query, &result) == errSecSuccess)
        let group = (result as? [String: Any])?[kSecAttrAccessGroup as String] as? String
        #expect(group == KeychainDefaults.accessGroups.first)
        #expect(group?.hasPrefix("SecurityServicesPackageTests") == true, "\(group ?? "nil")")
    }

}
