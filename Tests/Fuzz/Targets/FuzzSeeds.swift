import KeychainWire
import Foundation
import Keychain
import Security

/// Corpus seeds made with the project's own encoders: keys generated here and wire messages. (`make fuzz` adds
/// files: the test vectors' certificates and CRLs, and certificates, keys and PKCS#12 files openssl makes.)
enum FuzzSeeds {
    static func keyRepresentations() -> [Data] {
        var seeds: [Data] = []
        for (type, bits) in [(kSecAttrKeyTypeECSECPrimeRandom, 256), (kSecAttrKeyTypeRSA, 1024)] {
            let attributes = [kSecAttrKeyType as String: type, kSecAttrKeySizeInBits as String: bits] as CFDictionary
            guard let key = SecKeyCreateRandomKey(attributes, nil), let publicKey = SecKeyCopyPublicKey(key) else { continue }
            let ec: UInt8 = type == kSecAttrKeyTypeRSA ? 0 : 1
            if let data = SecKeyCopyExternalRepresentation(publicKey, nil) as Data? { seeds.append(Data([ec]) + data) }
            if let data = SecKeyCopyExternalRepresentation(key, nil) as Data? { seeds.append(Data([ec | 2]) + data) }
        }
        return seeds
    }

    static func wireMessages() -> [Data] {
        let query = ItemQuery(.genericPassword)
        let requests: [KeychainWire.Request] = [.hello(requesting: ["fuzz"]), .find(query), .delete(query), .keychainLock(.status)]
        return requests.map { Data(KeychainWire.encode($0)) }
    }
}
