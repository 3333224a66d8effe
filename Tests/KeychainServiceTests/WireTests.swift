import KeychainWire
import SecurityBase
import CryptoContract
import Foundation
@testable import Keychain
import Testing

/// The keychain service's wire: every message kind survives a round trip byte for byte, and every malformed body
/// is a `.parameter` error (never a crash, never a half-built request).
@Suite("Keychain service wire")
struct WireTests {
    static let attributes: ItemAttributes = [
        .account: .string("alice"), .service: .string("mail"), .generic: .data(Data([0, 1, 2, 255])),
        .port: .number(-443), .isInvisible: .bool(true), .creationDate: .date(Date(timeIntervalSinceReferenceDate: 12345.678)),
    ]
    static let query = ItemQuery(
        .internetPassword, matching: attributes, synchronizable: .any, limit: .count(7), caseInsensitive: true,
        persistentReference: Data([9, 8, 7]), returning: [.data, .attributes, .persistentReference])
    static let item = KeychainItem(
        itemClass: .key, attributes: attributes, data: Data("secret".utf8), persistentReference: Data([1]), identityKeyData: nil)

    static let requests: [KeychainWire.Request] = [
        .hello(requesting: []),
        .hello(requesting: ["com.example.a", "b"]),
        .addIdentity(certificate: attributes, certificateData: Data([1]), key: [.keyClass: .number(1)], keyData: Data([2]), returning: [.attributes]),
        .add(.genericPassword, attributes: attributes, data: Data("pw".utf8), returning: [.persistentReference]),
        .add(.certificate, attributes: [:], data: nil, returning: []),
        .addItems(
            [.init(.key, attributes: attributes, data: Data([1, 2])), .init(.genericPassword, attributes: [:])],
            unlessAnyMatches: [query, ItemQuery(.key)]),
        .find(query),
        .find(ItemQuery(nil, persistentReference: Data([1, 2, 3]))),
        .find(ItemQuery(.genericPassword, returning: .data, authentication: ItemAuthentication(password: SecretBytes(Array("pw".utf8)), reuse: .seconds(10), interaction: .fail))),
        .find(ItemQuery(.genericPassword, returning: .data, authentication: ItemAuthentication(interaction: .skip))),
        .update(query, attributes: [.label: .string("new")], data: Data()),
        .delete(ItemQuery(.genericPassword, limit: .all)),
        .keyOperation(.sign, reference: Data([1, 2]), algorithm: "algid:sign:RSA:message-PSS:SHA256:SHA256:32", input: Data("m".utf8)),
        .keyOperation(.decrypt, reference: Data([3]), algorithm: "algid:encrypt:RSA:OAEP:SHA256", input: Data()),
        .keyOperation(.sign, reference: Data([4]), algorithm: "a", input: Data([5]), authentication: ItemAuthentication(password: SecretBytes(Array("pw".utf8)), reuse: .seconds(5))),
        .generateKey(keyType: 73, bits: 384, attributes: [.label: .string("signing")], returning: [.reference]),
        .keychainLock(.status), .keychainLock(.setPassword(Data("pw".utf8))), .keychainLock(.unlock(Data())), .keychainLock(.lock),
        .keychainLock(.changePassword(old: Data("old".utf8), new: Data("new".utf8))),
        .keychainLock(.setSettings(interval: 3600, lockOnSleep: true)), .keychainLock(.setSettings(interval: nil, lockOnSleep: false)),
        .keychainLock(.settings), .keychainLock(.verifyPassword(Data("pw".utf8))), .openKeychain(name: "build.keychain", create: true), .openKeychain(name: "x", create: false),
        .deleteKeychain(name: "build.keychain"),
    ]

    static let responses: [KeychainWire.Response] = [
        .groups(["com.example.mail", "app.0123"]), .item(item), .added(true), .added(false), .items([item, item]),
        .items([]), .count(3), .bytes(Data([0, 255])), .bytes(Data()), .lockStatus(passwordLocked: true, locked: false),
        .lockSettings(interval: 300, lockOnSleep: false), .lockSettings(interval: nil, lockOnSleep: true),
        .failure(KeychainError(.interactionNotAllowed, "locked")), .failure(KeychainError(.missingEntitlement, "not yours")),
    ]

    @Test("every request and response kind: decode(encode(x)) encodes to the same bytes")
    func roundTrips() throws {
        for request in Self.requests {
            let bytes = KeychainWire.encode(request)
            #expect(KeychainWire.encode(try KeychainWire.decodeRequest(bytes)) == bytes)
        }
        for response in Self.responses {
            let bytes = KeychainWire.encode(response)
            #expect(KeychainWire.encode(try KeychainWire.decodeResponse(bytes)) == bytes)
        }
        guard case .failure(let error) = try KeychainWire.decodeResponse(KeychainWire.encode(Self.responses.last!)) else {
            Issue.record("the failure did not come back as one")
            return
        }
        #expect(error.code == .missingEntitlement && error.reason == "not yours")
    }

    @Test("every truncation of every message, a byte more, another version, an unknown kind: .parameter errors")
    func malformed() throws {
        for request in Self.requests {
            let bytes = KeychainWire.encode(request)
            for length in 0..<bytes.count {
                #expect(throws: KeychainError(.parameter, "")) { _ = try KeychainWire.decodeRequest(Array(bytes[..<length])) }
            }
            #expect(throws: KeychainError(.parameter, "")) { _ = try KeychainWire.decodeRequest(bytes + [0]) }
            var otherVersion = bytes
            otherVersion[0] = 2
            #expect(throws: KeychainError(.parameter, "")) { _ = try KeychainWire.decodeRequest(otherVersion) }
        }
        for response in Self.responses {
            let bytes = KeychainWire.encode(response)
            for length in 0..<bytes.count {
                #expect(throws: KeychainError(.parameter, "")) { _ = try KeychainWire.decodeResponse(Array(bytes[..<length])) }
            }
        }
        #expect(throws: KeychainError(.parameter, "")) { _ = try KeychainWire.decodeRequest([KeychainWire.version, 99]) }
        // A key operation of a kind the service does not know.
        var keyOperation = KeychainWire.encode(.keyOperation(.sign, reference: Data([1]), algorithm: "a", input: Data()))
        keyOperation[2] = 9
        #expect(throws: KeychainError(.parameter, "")) { _ = try KeychainWire.decodeRequest(keyOperation) }
        // A keychain lock request of a kind the service does not know.
        #expect(throws: KeychainError(.parameter, "")) { _ = try KeychainWire.decodeRequest([KeychainWire.version, 9, 5]) }
        // A find whose attribute count claims more entries than the body could hold.
        #expect(throws: KeychainError(.parameter, "")) {
            _ = try KeychainWire.decodeRequest([KeychainWire.version, 3, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF])
        }
        // Text that is not UTF-8 as an item class; an unknown class is errSecNoSuchClass.
        #expect(throws: KeychainError(.parameter, "")) {
            _ = try KeychainWire.decodeRequest([KeychainWire.version, 3, 0, 0, 0, 2, 0xC3, 0x28])
        }
        #expect(throws: KeychainError(.noSuchClass, "")) {
            _ = try KeychainWire.decodeRequest([KeychainWire.version, 3, 0, 0, 0, 4] + Array("zzzz".utf8))
        }
        // The same attribute twice, and a truth value of 2.
        func find(attributes count: UInt8) -> [UInt8] {
            var body: [UInt8] = [KeychainWire.version, 3, 0, 0, 0, 4] + Array("genp".utf8) + [0, 0, 0, count]
            for _ in 0..<count { body += [0, 0, 0, 4] + Array("acct".utf8) + [1, 0, 0, 0, 1, 0x61] }
            return body + [0, 0, 0, 0, 0, 0]  // sync, limit, case, no reference, returning, no proof of the user
        }
        #expect(throws: Never.self) { _ = try KeychainWire.decodeRequest(find(attributes: 1)) }
        #expect(throws: KeychainError(.parameter, "")) { _ = try KeychainWire.decodeRequest(find(attributes: 2)) }
        let add = KeychainWire.encode(.add(.genericPassword, attributes: [:], data: nil, returning: []))
        var badBool = add
        badBool[badBool.count - 2] = 2
        #expect(throws: KeychainError(.parameter, "")) { _ = try KeychainWire.decodeRequest(badBool) }
    }

    @Test("a frame reader returns frames sent together one by one, a frame longer than one receive whole, and errors for a cut or oversized frame")
    func frameReader() throws {
        var fds: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { close(fds[0]) }
        KeychainFraming.setTimeout(.seconds(10), on: fds[0])
        var reader = FrameReader(fd: fds[0], spin: .microseconds(50))
        let writer = fds[1]
        @Sendable func write(_ bytes: [UInt8]) {
            _ = bytes.withUnsafeBytes { send(writer, $0.baseAddress, bytes.count, 0) }
        }
        // Two frames and the start of a third in one write, then the rest of the third.
        let long = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let third = [0, 1, 0x86, 0xA0] + long
        write([0, 0, 0, 3, 1, 2, 3, 0, 0, 0, 0] + third[..<30_000])
        Thread.detachNewThread { write(Array(third[30_000...]) + [0, 0, 0, 1, 9]) }
        #expect(try reader.next() == [1, 2, 3])
        #expect(try reader.next() == [])
        #expect(try reader.next() == long)
        #expect(try reader.next() == [9])
        // A length over the limit, then a frame cut by the peer's close, then the end.
        write([0x7F, 0xFF, 0xFF, 0xFF])
        #expect(throws: KeychainError(.parameter, "")) { _ = try reader.next() }
        var cut = FrameReader(fd: fds[0])
        write([0, 0, 0, 9, 1, 2])
        close(writer)
        #expect(throws: KeychainError(.io, "")) { _ = try cut.next() }
        #expect(try cut.next() == nil)
    }
}
