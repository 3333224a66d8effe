import Foundation
import Security
import TestVectors
import Testing

/// Apple's trust-settings calls, and what they do to SecTrust: Deny, Proceed, allowed errors, domains.
@Suite("Security: SecTrustSettings", .isolatedKeychain(["com.example.trustsettings"]))
struct SecTrustSettingsTests {
    @Test("A user's Deny on the intermediate: kSecTrustResultDeny, errSecTrustSettingDeny, and removing it restores trust")
    func deny() throws {
        let fixtures = try TrustFixtures.get()
        let inter = try fixtures.certificate("inter")
        let policy = SecPolicyCreateSSL(true, "www.example.com" as CFString)
        let before = evaluate(try makeTrust(fixtures, ["leaf", "inter"], policies: policy))
        #expect(before.0 == .unspecified)

        let deny: [String: Any] = [kSecTrustSettingsResult as String: SecTrustSettingsResult.deny.rawValue]
        #expect(SecTrustSettingsSetTrustSettings(inter, .user, deny as CFDictionary) == errSecSuccess)
        let (result, code, message) = evaluate(try makeTrust(fixtures, ["leaf", "inter"], policies: policy))
        #expect(result == .deny)
        #expect(code == Int(errSecTrustSettingDeny))
        #expect(message.contains("SecTrust Test Intermediate"), "\(message)")
        // Not forgiven by exceptions or allow-expired.
        let trust = try makeTrust(fixtures, ["leaf", "inter"], policies: policy)
        _ = evaluate(trust)
        let exceptions = try #require(SecTrustCopyExceptions(trust))
        #expect(SecTrustSetExceptions(trust, exceptions))
        #expect(evaluate(trust).0 == .deny)

        var settings: CFArray?
        #expect(SecTrustSettingsCopyTrustSettings(inter, .user, &settings) == errSecSuccess)
        let array = try #require(settings as? [[String: Any]])
        #expect(array.count == 1)
        #expect((array.first?[kSecTrustSettingsResult as String] as? NSNumber)?.uint32Value == SecTrustSettingsResult.deny.rawValue)
        var date: CFDate?
        #expect(SecTrustSettingsCopyModificationDate(inter, .user, &date) == errSecSuccess)
        #expect(abs((date as Date?)?.timeIntervalSinceNow ?? 1e9) < 60)

        #expect(SecTrustSettingsRemoveTrustSettings(inter, .user) == errSecSuccess)
        #expect(SecTrustSettingsRemoveTrustSettings(inter, .user) == errSecItemNotFound)
        #expect(SecTrustSettingsCopyTrustSettings(inter, .user, &settings) == errSecItemNotFound)
        #expect(evaluate(try makeTrust(fixtures, ["leaf", "inter"], policies: policy)).0 == .unspecified)
    }

    @Test("A root the user trusts (nil settings: for everything) is an anchor without SecTrustSetAnchorCertificates: Proceed")
    func trustRoot() throws {
        let fixtures = try TrustFixtures.get()
        let root = try fixtures.certificate("root")
        let policy = SecPolicyCreateSSL(true, "www.example.com" as CFString)
        let untrusted = evaluate(try makeTrust(fixtures, ["leaf", "inter", "root"], policies: policy, anchors: nil))
        #expect(untrusted.0 == .recoverableTrustFailure)

        #expect(SecTrustSettingsSetTrustSettings(root, .user, nil) == errSecSuccess)
        let trust = try makeTrust(fixtures, ["leaf", "inter", "root"], policies: policy, anchors: nil)
        #expect(evaluate(trust).0 == .proceed)
        #expect(SecTrustGetCertificateCount(trust) == 3)
        var certificates: CFArray?
        #expect(SecTrustSettingsCopyCertificates(.user, &certificates) == errSecSuccess)
        #expect((certificates as? [SecCertificate])?.count == 1)
        // The application's own anchors only: the user's anchor does not count.
        let other = try makeTrust(fixtures, ["leaf", "inter", "root"], policies: policy, anchors: ["otherRoot"])
        #expect(evaluate(other).0 == .recoverableTrustFailure)
        // With anchors-only off, it does again.
        #expect(SecTrustSetAnchorCertificatesOnly(other, false) == errSecSuccess)
        #expect(evaluate(other).0 == .proceed)
    }

    @Test("An allowed error on the leaf (errSecCertificateExpired) turns an expired leaf into Proceed, for the SSL policy only")
    func allowedError() throws {
        let fixtures = try TrustFixtures.get()
        let expired = try fixtures.certificate("expired")
        let ssl = SecPolicyCreateSSL(true, "expired.example.com" as CFString)
        let constraint: [String: Any] = [
            kSecTrustSettingsPolicy as String: SecPolicyCreateSSL(true, nil),
            kSecTrustSettingsAllowedError as String: errSecCertificateExpired,
            kSecTrustSettingsResult as String: SecTrustSettingsResult.unspecified.rawValue,
        ]
        #expect(SecTrustSettingsSetTrustSettings(expired, .user, [constraint] as CFArray) == errSecSuccess)
        #expect(evaluate(try makeTrust(fixtures, ["expired", "inter"], policies: ssl)).0 == .proceed)
        let basic = evaluate(try makeTrust(fixtures, ["expired", "inter"], policies: SecPolicyCreateBasicX509()))
        #expect(basic.0 == .recoverableTrustFailure)
        #expect(basic.1 == Int(errSecCertificateExpired))
    }

    @Test("The administrator's Deny applies unless the user decides otherwise")
    func domains() throws {
        let fixtures = try TrustFixtures.get()
        let root = try fixtures.certificate("root")
        let deny: [String: Any] = [kSecTrustSettingsResult as String: SecTrustSettingsResult.deny.rawValue]
        #expect(SecTrustSettingsSetTrustSettings(root, .admin, deny as CFDictionary) == errSecSuccess)
        #expect(evaluate(try makeTrust(fixtures, ["leaf", "inter"])).0 == .deny, "a denied application anchor")
        #expect(SecTrustSettingsSetTrustSettings(root, .user, [] as CFArray) == errSecSuccess)
        #expect(evaluate(try makeTrust(fixtures, ["leaf", "inter", "root"], anchors: nil)).0 == .proceed)
        // With the application's anchors only, the user's anchor adds nothing: Unspecified.
        #expect(evaluate(try makeTrust(fixtures, ["leaf", "inter"])).0 == .unspecified)
        var settings: CFArray?
        #expect(SecTrustSettingsCopyTrustSettings(root, .admin, &settings) == errSecSuccess)
        #expect(SecTrustSettingsCopyTrustSettings(root, .user, &settings) == errSecSuccess)
        #expect((settings as? [Any])?.isEmpty == true)
    }

    @Test("Bad input: errSecParam and nothing stored; the system domain cannot be changed")
    func badInput() throws {
        let fixtures = try TrustFixtures.get()
        let inter = try fixtures.certificate("inter")
        let root = try fixtures.certificate("root")
        let cases: [(SecCertificate, CFTypeRef)] = [
            (inter, ["unknownKey": 1] as CFDictionary),
            (inter, [kSecTrustSettingsResult as String: SecTrustSettingsResult.invalid.rawValue] as CFDictionary),
            (inter, [kSecTrustSettingsResult as String: 9] as CFDictionary),
            (inter, [kSecTrustSettingsResult as String: "deny"] as CFDictionary),
            (inter, [kSecTrustSettingsResult as String: SecTrustSettingsResult.trustRoot.rawValue] as CFDictionary),
            (root, [kSecTrustSettingsResult as String: SecTrustSettingsResult.trustAsRoot.rawValue] as CFDictionary),
            (inter, [kSecTrustSettingsAllowedError as String: errSecInvalidSignature] as CFDictionary),
            (inter, [kSecTrustSettingsAllowedError as String: 12345] as CFDictionary),
            (inter, [kSecTrustSettingsPolicy as String: "1.2.3"] as CFDictionary),
            (inter, [kSecTrustSettingsPolicy as String: SecPolicyCreateRevocation(kSecRevocationOCSPMethod)!] as CFDictionary),
            (inter, [kSecTrustSettingsKeyUsage as String: SecTrustSettingsKeyUsage.useSignature.rawValue] as CFDictionary),
            (inter, [kSecTrustSettingsApplication as String: "app"] as CFDictionary),
            (inter, "not settings" as CFString),
            (inter, [["x": 1]] as CFArray),
        ]
        for (certificate, value) in cases {
            #expect(SecTrustSettingsSetTrustSettings(certificate, .user, value) == errSecParam, "\(value)")
            var settings: CFArray?
            #expect(SecTrustSettingsCopyTrustSettings(certificate, .user, &settings) == errSecItemNotFound)
        }
        var certificates: CFArray?
        #expect(SecTrustSettingsCopyCertificates(.user, &certificates) == errSecNoTrustSettings)
        #expect(SecTrustSettingsSetTrustSettings(root, .system, nil) == errSecDataNotModifiable)
        #expect(SecTrustSettingsRemoveTrustSettings(root, .system) == errSecDataNotModifiable)
        var settings: CFArray?
        #expect(SecTrustSettingsCopyTrustSettings(root, .system, &settings) == errSecItemNotFound)
        // Key usage "any" is accepted.
        let any: [String: Any] = [kSecTrustSettingsKeyUsage as String: SecTrustSettingsKeyUsage.useAny.rawValue]
        #expect(SecTrustSettingsSetTrustSettings(root, .user, any as CFDictionary) == errSecSuccess)
    }
}
