import Foundation
import Keychain
import Testing

/// Attribute keys are compared and hashed as their names' UTF-8 bytes, packed into an integer when short ASCII
/// (no string hashing in the planner). Equal keys must hash alike and unequal ones must stay apart
/// in every combination of packed and unpacked names.
@Suite("Keychain: attribute keys")
struct AttributeKeyTests {
    static let names = [
        "", "a", "acct", "svce", "acctx", "12345678", "123456789", "abcdefgh", "abcdefgi", "labl\u{0}", "caf\u{E9}",
        "cafe\u{301}", "\u{212A}eys", "Keys", "a-much-longer-attribute-name", "a-much-longer-attribute-namf",
    ]

    @Test("equal exactly when the UTF-8 bytes are, with equal hashes, and ordered by bytes")
    func equalityAndHashing() {
        for a in Self.names {
            for b in Self.names {
                let (x, y) = (AttributeKey(a), AttributeKey(b))
                #expect((x == y) == Array(a.utf8).elementsEqual(Array(b.utf8)), "\(a.debugDescription) vs \(b.debugDescription)")
                if x == y { #expect(x.hashValue == y.hashValue) }
                #expect((x < y) == Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)))
            }
        }
        // Canonically equivalent strings are different tags (Swift's String would call them equal).
        #expect("\u{212A}eys" == "Keys")
        #expect(AttributeKey("\u{212A}eys") != AttributeKey("Keys"))
        #expect(AttributeKey.account == AttributeKey(rawValue: "acct"))
        #expect(Set(Self.names.map { AttributeKey($0) }).count == Self.names.count)
    }

    @Test("dictionaries find every key, and JSON keeps the name as a string")
    func dictionariesAndCoding() throws {
        var table: [AttributeKey: Int] = [:]
        for (index, name) in Self.names.enumerated() { table[AttributeKey(name)] = index }
        for (index, name) in Self.names.enumerated() { #expect(table[AttributeKey(name)] == index) }
        let encoded = try JSONEncoder().encode([AttributeKey.service, AttributeKey("a-much-longer-attribute-name")])
        #expect(String(decoding: encoded, as: UTF8.self) == #"["svce","a-much-longer-attribute-name"]"#)
        #expect(try JSONDecoder().decode([AttributeKey].self, from: encoded) == [.service, AttributeKey("a-much-longer-attribute-name")])
    }
}
