import Foundation
import Security
import Testing

@Suite("Security: SecPolicy and SecTrust")
struct SecTrustTests {
    @Test("policies: Apple's identifiers, properties and revocation flags")
    func policies() throws {
        #expect(kSecRevocationOCSPMethod == 1 && kSecRevocationCRLMethod == 2 && kSecRevocationPreferCRL == 4)
        #expect(kSecRevocationRequirePositiveResponse == 8 && kSecRevocationNetworkAccessDisabled == 16)
        #expect(kSecRevocationUseAnyAvailableMethod == 3)
        let basic = SecPolicyCopyProperties(SecPolicyCreateBasicX509()) as! [String: Any]  // !: always a dictionary
        #expect(basic[kSecPolicyOid as String] as? String == "1.2.840.113635.100.1.2")
        #expect(basic.count == 1)
        let server = SecPolicyCopyProperties(SecPolicyCreateSSL(true, "www.example.com" as CFString)) as! [String: Any]
        #expect(server[kSecPolicyOid as String] as? String == "1.2.840.113635.100.1.3")
        #expect(server[kSecPolicyName as String] as? String == "www.example.com")
        #expect(server[kSecPolicyClient as String] == nil)
        let client = SecPolicyCopyProperties(SecPolicyCreateSSL(false, nil)) as! [String: Any]
        #expect(client[kSecPolicyOid as String] as? String == "1.2.840.113635.100.1.3")
        #expect(client[kSecPolicyClient as String] as? Bool == true)
        #expect(client[kSecPolicyName as String] == nil)
        let revocation = try #require(SecPolicyCreateRevocation(kSecRevocationUseAnyAvailableMethod))
        let properties = SecPolicyCopyProperties(revocation) as! [String: Any]
        #expect(properties[kSecPolicyOid as String] as? String == "1.2.840.113635.100.1.26")
        #expect(SecPolicyCreateRevocation(kSecRevocationRequirePositiveResponse) == nil)
    }
}
