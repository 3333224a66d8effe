import CryptoContract
import CryptoDispatcher
import Foundation
@testable import Keychain
import Testing

/// Issue 22, item 12: a sealed blob gave the secret's exact length away. Version 2 pads; version 1 stays readable.
@Suite("Keychain: padded envelopes (version 2) and version-1 blobs")
struct EnvelopePaddingTests {
    let master = try! [UInt8](repeating: 0x33, count: 32).withUnsafeBytes { try KeyFileMasterKey(bytes: $0) }  // !: 32 bytes
    let identity = Array("genp|service|account".utf8)

    @Test("lengths show only to within 32 bytes; every length opens to itself", arguments: [0, 1, 16, 31, 32, 33, 63, 64, 200])
    func padding(_ length: Int) throws {
        let secret = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 1) }
        let blob = try SecretEnvelope.seal(secret, identity: identity, masterKey: master)
        #expect(blob[0] == 2)
        #expect(blob.count == SecretEnvelope.headerSize + (length / 32 + 1) * 32, "\(length) bytes sealed as \(blob.count)")
        #expect(try SecretEnvelope.open(blob, identity: identity, masterKey: master) == secret)
        // A secret ending in zeros or in 0x80 keeps them: the padding is found from its own end.
        let awkward = secret + [0x80, 0, 0]
        #expect(try SecretEnvelope.open(SecretEnvelope.seal(awkward, identity: identity, masterKey: master), identity: identity, masterKey: master) == awkward)
    }

    @Test("a version-1 blob still opens; a blob relabelled as the other version does not authenticate")
    func versions() throws {
        let secret = Array("hunter2".utf8)
        let old = try SecretEnvelope.seal(secret, identity: identity, wrapping: .holder(master), engine: Dispatcher.shared, version: 1)
        #expect(old[0] == 1 && old.count == SecretEnvelope.headerSize + secret.count)
        #expect(try SecretEnvelope.open(old, identity: identity, masterKey: master) == secret)
        var relabelled = old
        relabelled[0] = 2
        #expect(throws: KeychainError(.decode, "")) { try SecretEnvelope.open(relabelled, identity: identity, masterKey: master) }
        var downgraded = try SecretEnvelope.seal(secret, identity: identity, masterKey: master)
        downgraded[0] = 1
        #expect(throws: KeychainError(.decode, "")) { try SecretEnvelope.open(downgraded, identity: identity, masterKey: master) }
        var unknown = old
        unknown[0] = 3
        #expect(throws: KeychainError(.decode, "")) { try SecretEnvelope.open(unknown, identity: identity, masterKey: master) }
    }
}
