import Foundation
import Security
import Testing

/// The Core Foundation calls Apple-platform code makes on Security results, written as that code writes them.
@Suite("Security: Core Foundation calls on Security results")
struct CoreFoundationCallsTests {
    @Test("a CFError from a Security call: code, domain, user info and description; noErr compares with OSStatus")
    func errors() throws {
        var error: Unmanaged<CFError>?
        let attributes: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeRSA]
        let key = SecKeyCreateWithData(Data([1, 2, 3]) as CFData, attributes as CFDictionary, &error)
        #expect(key == nil)
        let cfError = try #require(error?.takeRetainedValue())
        #expect(CFErrorGetCode(cfError) == CFIndex(errSecParam))
        #expect(CFErrorGetDomain(cfError) as String == kCFErrorDomainOSStatus as String)
        #expect((CFErrorCopyDescription(cfError) as String).contains("kSecAttrKeyClass"))
        let userInfo = CFErrorCopyUserInfo(cfError) as? [String: Any]
        #expect((userInfo?[NSLocalizedDescriptionKey] as? String)?.contains("kSecAttrKeyClass") == true)
        #expect(CFErrorCopyFailureReason(cfError) == nil)

        var bytes = [UInt8](repeating: 0, count: 16)
        let status: OSStatus = SecRandomCopyBytes(kSecRandomDefault, bytes.count, &bytes)
        #expect(status == noErr)
        #expect(errSecParam != noErr)
    }

    @Test("CFGetTypeID tells each Security and Core Foundation type apart, as Apple code checks before a cast")
    func typeIdentifiers() throws {
        var error: Unmanaged<CFError>?
        let parameters: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256]
        let key = try #require(SecKeyCreateRandomKey(parameters as CFDictionary, &error))
        let fixtures = try TrustFixtures.get()
        let certificate = try fixtures.certificate("leaf")
        let policy = SecPolicyCreateSSL(true, "www.example.com" as CFString)
        var trust: SecTrust?
        #expect(SecTrustCreateWithCertificates(certificate, policy, &trust) == errSecSuccess)
        let objects: [(CFTypeRef, CFTypeID)] = [
            (key, SecKeyGetTypeID()), (certificate, SecCertificateGetTypeID()), (policy, SecPolicyGetTypeID()),
            (try #require(trust), SecTrustGetTypeID()), ("text" as CFString, CFStringGetTypeID()),
            (Data([1]) as CFData, CFDataGetTypeID()), (NSDictionary(), CFDictionaryGetTypeID()), (NSArray(), CFArrayGetTypeID()),
            (NSNumber(value: 3), CFNumberGetTypeID()), (kCFBooleanTrue, CFBooleanGetTypeID()), (NSDate(), CFDateGetTypeID()),
            (NSError(domain: "d", code: 1), CFErrorGetTypeID()),
        ]
        for (object, expected) in objects {
            #expect(CFGetTypeID(object) == expected, "\(object)")
        }
        #expect(Set(objects.map(\.1)).count == objects.count, "every type has its own identifier")
        // The idiom: check the type, then cast.
        let found: CFTypeRef = key
        if CFGetTypeID(found) == SecKeyGetTypeID() {
            #expect(SecKeyCopyPublicKey(found as! SecKey) != nil)  // !: the type was checked on the line above
        } else {
            Issue.record("a SecKey's type identifier is not SecKeyGetTypeID()")
        }
    }
}
