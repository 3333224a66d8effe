import CryptoContract
import CryptoDispatcher
import Foundation
@testable import Keychain
import Testing

/// An unpadded sealed blob gives the secret's exact length away: versions 2 and 3 pad; version 1 stays readable.
@Suite("Keychain: padded envelopes (versions 2 to 5) and version-1 blobs")
struct EnvelopePaddingTests {
    let master = try! [UInt8](repeating: 0x33, count: 32).withUnsafeBytes { try KeyFileMasterKey(bytes: $0) }  // !: 32 bytes
    let identity = Array("genp|service|account".utf8)

    @Test("lengths show only to within 32 bytes; every length opens to itself", arguments: [0, 1, 16, 31, 32, 33, 63, 64, 200])
    func padding(_ length: Int) throws {
        let secret = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 1) }
        let blob = try SecretEnvelope.seal(secret, identity: identity, masterKey: master)
        #expect(blob[0] == SecretEnvelope.version)
        #expect(blob.count == 1 + 12 + 16 + (length / 32 + 1) * 32, "\(length) bytes sealed as \(blob.count)")
        #expect(try SecretEnvelope.open(blob, identity: identity, masterKey: master) == secret)
        // A secret ending in zeros or in 0x80 keeps them: the padding is found from its own end.
        let awkward = secret + [0x80, 0, 0]
        #expect(try SecretEnvelope.open(SecretEnvelope.seal(awkward, identity: identity, masterKey: master), identity: identity, masterKey: master) == awkward)
    }

    @Test("older versions still open; a blob relabelled as another version does not authenticate")
    func versions() throws {
        let secret = Array("hunter2".utf8)
        let v1 = try SecretEnvelope.seal(secret, identity: identity, wrapping: .holder(master), engine: Dispatcher.shared, version: 1)
        #expect(v1[0] == 1 && v1.count == SecretEnvelope.wrappedHeaderSize + secret.count)
        let v2 = try SecretEnvelope.seal(secret, identity: identity, wrapping: .holder(master), engine: Dispatcher.shared, version: 2)
        #expect(v2[0] == 2 && v2.count == SecretEnvelope.wrappedHeaderSize + 32)
        let v3 = try SecretEnvelope.seal(secret, identity: identity, wrapping: .holder(master), engine: Dispatcher.shared, version: 3)
        #expect(v3[0] == 3 && v3.count == SecretEnvelope.headerSize + 32)
        let v4 = try SecretEnvelope.seal(secret, identity: identity, wrapping: .holder(master), engine: Dispatcher.shared, version: 4)
        #expect(v4[0] == 4 && v4.count == SecretEnvelope.headerSize + 32)
        let v5 = try SecretEnvelope.seal(secret, identity: identity, masterKey: master)
        #expect(v5[0] == 5 && v5.count == SecretEnvelope.headerSize + 32)
        for blob in [v1, v2, v3, v4, v5] {
            #expect(try SecretEnvelope.open(blob, identity: identity, masterKey: master) == secret)
            // Every other label: another layout or other associated data, never the secret.
            for label: UInt8 in [1, 2, 3, 4, 5, 6, 0] where label != blob[0] {
                var relabelled = blob
                relabelled[0] = label
                #expect(throws: KeychainError(.decode, ""), "version \(blob[0]) relabelled \(label)") {
                    try SecretEnvelope.open(relabelled, identity: identity, masterKey: master)
                }
            }
        }
        // A keyed context and the master key lent per call seal and open the same envelope.
        let keyed = SecretEnvelope.WrappingKey.keyed(try [UInt8](repeating: 0x33, count: 32).withUnsafeBytes { try Dispatcher.shared.makeAEADKey(.aesGCM, key: $0) })
        #expect(try SecretEnvelope.open(v3, identity: identity, wrapping: keyed, engine: Dispatcher.shared) == secret)
        let sealedKeyed = try SecretEnvelope.seal(secret, identity: identity, wrapping: keyed, engine: Dispatcher.shared)
        #expect(try SecretEnvelope.open(sealedKeyed, identity: identity, masterKey: master) == secret)
    }
}
