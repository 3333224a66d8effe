import SecurityBase
import CryptoContract
import CryptoDispatcher
import Foundation

extension EmbeddedKeychain {
    // Persistent references.

    /// `01 | class (4) | uuid (16) [| key uuid (16) for an identity] | MAC (16)`: opaque, stable for the item's
    /// life (across updates, restarts and backup/restore), and unforgeable without the master key. A reference
    /// finds its item only for a caller in the item's access group.
    func reference(for item: StoredItem) throws -> Data {
        var body: [UInt8] = [1] + Array(item.itemClass.rawValue.utf8) + item.uuid
        if let key = item.identityKey { body += key.uuid }
        return Data(body + (try keys.referenceMAC(body)))
    }

    func parseReference(_ reference: Data) throws -> (itemClass: ItemClass, uuid: [UInt8], keyUUID: [UInt8]?) {
        let bytes = Array(reference)
        guard bytes.count == 37 || bytes.count == 53, bytes[0] == 1,
            let itemClass = ItemClass(rawValue: String(decoding: bytes[1..<5], as: UTF8.self)),
            (itemClass == .identity) == (bytes.count == 53)
        else { throw KeychainError(.parameter, "not a persistent reference") }
        let body = Array(bytes[..<(bytes.count - 16)])
        guard constantTimeEquals(try keys.referenceMAC(body), Array(bytes[(bytes.count - 16)...])) else {
            throw KeychainError(.itemNotFound, "the persistent reference does not belong to this keychain")
        }
        let uuid = Array(bytes[5..<21])
        return (itemClass, uuid, itemClass == .identity ? Array(bytes[21..<37]) : nil)
    }
}
