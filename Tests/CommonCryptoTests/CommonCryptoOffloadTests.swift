import CommonCrypto
import CryptoContract
import CryptoDispatcher
import KernelBackend
import SoftwareBackend
import Testing
import TestVectors

@testable import CommonCryptoAdapter

/// The phone's offload through Apple's API: large CCCrypt AES, CC_SHA1 and CCHmac SHA-1 calls go to the kernel,
/// small ones to software, with identical results. On a machine without AF_ALG every call is software (the
/// fallback); in the VM (`SECURITYSERVICES_REQUIRE_AFALG=1`) the kernel must serve the large ones.
@Suite("CommonCrypto offload (Kernel/AF_ALG where present)")
struct CommonCryptoOffloadTests {
    let kernelHere = KernelBackend.isAvailable || AFALGGate.required

    @Test("AES, SHA-1 and HMAC-SHA1 at or above the threshold are served by the kernel, below it by software")
    func offload() throws {
        let threshold = 4096
        let routes = [Route.cipher(.aes128, .cbc, .encrypt)!, Route.cipher(.aes128, .cbc, .decrypt)!, Route.digest(.sha1)!, Route.hmac(.sha1)!]
        let dispatcher = Dispatcher(DispatchConfiguration(policy: .auto, thresholds: Dictionary(uniqueKeysWithValues: routes.map { ($0, threshold) })))
        let software = SoftwareBackend()
        let key = [UInt8](repeating: 0x42, count: 16)
        let iv = [UInt8](repeating: 0x24, count: 16)
        try Engine.$current.withValue(dispatcher) { () throws -> Void in
            for size in [1024, 65536] {
                let data = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 3) }
                let encrypted = ccCrypt(kCCEncrypt, CCAlgorithm(kCCAlgorithmAES), 0, key: key, iv: iv, data)
                #expect(encrypted.status == kCCSuccess)
                let reference = try software.crypt(.encrypt, CipherSpec(.aes128, .cbc), key: key, iv: iv, data)
                #expect(encrypted.output == reference)
                let decrypted = ccCrypt(kCCDecrypt, CCAlgorithm(kCCAlgorithmAES), 0, key: key, iv: iv, encrypted.output)
                #expect(decrypted.output == data)
                var digest = [UInt8](repeating: 0, count: 20)
                CC_SHA1(data, CC_LONG(size), &digest)
                let referenceDigest = try software.digest(.sha1, data)
                #expect(digest == referenceDigest)
                var mac = [UInt8](repeating: 0, count: 20)
                CCHmac(CCHmacAlgorithm(kCCHmacAlgSHA1), key, key.count, data, data.count, &mac)
                let referenceMAC = try software.hmac(.sha1, key: key, data)
                #expect(mac == referenceMAC)
            }
        }
        let counters = dispatcher.counters
        for route in routes {
            #expect(counters.count(.software, route) + counters.count(.kernel, route) == 2, "\(route)")
            #expect(counters.count(.kernel, route) == (kernelHere ? 1 : 0), "\(route): the 64 KiB call")
        }
    }
}
