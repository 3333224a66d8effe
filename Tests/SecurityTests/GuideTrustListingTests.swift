import Foundation
import Security
import TestVectors
import Testing

/// The trust listings of Apple's "Certificate, Key, and Trust Services Programming Guide", rewritten in Swift as an
/// Apple client would: iOS listings 2-1 (the trust half), 2-6 and 2-7, and OS X listings 3-3, 3-4 and 3-5.
@Suite("The programming guide's trust listings", .isolatedKeychain(["com.example.guide"]))
struct GuideTrustListingTests {

    @Test("Listing 2-1: kSecImportItemTrust is a trust over the bundled chain, evaluated")
    func importedTrust() throws {
        let data = try GuideListingTests.pkcs12Data(password: "password", commonName: "Guide Trust User") as CFData
        var identity: SecIdentity?
        var trust: SecTrust?
        #expect(GuideListingTests.extractIdentityAndTrust(data, &identity, &trust) == errSecSuccess)
        #expect(identity != nil)
        let myTrust = try #require(trust)
        var policies: CFArray?
        #expect(SecTrustCopyPolicies(myTrust, &policies) == errSecSuccess)
        #expect(policies as? [SecPolicy] == [SecPolicyCreateBasicX509()])
        // The bundled CA is not a system anchor: recoverable, as on the phone.
        var trustResult = SecTrustResultType.invalid
        #expect(SecTrustEvaluate(myTrust, &trustResult) == errSecSuccess)
        #expect(trustResult == .recoverableTrustFailure)
        let chain = try #require(SecTrustCopyCertificateChain(myTrust) as? [SecCertificate])
        #expect(chain.map { SecCertificateCopySubjectSummary($0) as String? } == ["Guide Trust User", "Guide CA"])
        // Trusting the bundled CA makes it pass.
        #expect(SecTrustSetAnchorCertificates(myTrust, [chain[1]] as CFArray) == errSecSuccess)
        #expect(SecTrustEvaluate(myTrust, &trustResult) == errSecSuccess)
        #expect(trustResult == .unspecified)
    }

    /// Listing 2-6, "Obtaining a policy reference object and evaluating trust", up to the evaluation.
    func evaluateCertificate(_ certData: Data, anchor: SecCertificate) -> (OSStatus, SecTrust?, SecTrustResultType) {
        let myCertData = certData as CFData
        guard let myCert = SecCertificateCreateWithData(nil, myCertData) else { return (errSecParam, nil, .invalid) }
        let myPolicy = SecPolicyCreateBasicX509()
        let myCerts = [myCert] as CFArray
        var myTrust: SecTrust?
        var status = SecTrustCreateWithCertificates(myCerts, myPolicy, &myTrust)
        var trustResult = SecTrustResultType.invalid
        if status == errSecSuccess, let myTrust {
            _ = SecTrustSetAnchorCertificates(myTrust, [anchor] as CFArray)  // the guide's "Romeo" chain root
            status = SecTrustEvaluate(myTrust, &trustResult)
        }
        return (status, myTrust, trustResult)
    }

    /// Listing 2-7, "Setting an evaluation date": one year back when the evaluation fails.
    func retryAYearAgo(_ myTrust: SecTrust, _ trustResult: inout SecTrustResultType) -> OSStatus {
        var status = errSecSuccess
        if trustResult == .recoverableTrustFailure {
            let trustTime = SecTrustGetVerifyTime(myTrust)
            let timeIncrement: CFAbsoluteTime = 31_536_000
            let currentTime = CFAbsoluteTimeGetCurrent()
            let newTime = currentTime - timeIncrement
            if trustTime - newTime != 0 {
                let newDate: CFDate = CFDateCreate(nil, newTime)
                _ = SecTrustSetVerifyDate(myTrust, newDate)
                status = SecTrustEvaluate(myTrust, &trustResult)
            }
        }
        return status
    }

    @Test("Listings 2-6 and 2-7: a leaf chaining to its anchor; one expired six months ago passes a year back")
    func evaluationListings() throws {
        let fixtures = try TrustFixtures.get()
        let anchor = try fixtures.certificate("inter")
        // 2-6 on a good certificate (its issuer the anchor): unspecified.
        var (status, trust, trustResult) = evaluateCertificate(
            try TrustFixtures.der(fixtures.pem["leaf"]!), anchor: anchor)  // !: a fixture
        #expect(status == errSecSuccess && trust != nil && trustResult == .unspecified)
        // 2-6 then 2-7 on one that expired six months ago.
        #expect(try !fixtures.opensslVerifies("recent", anchors: ["root"], untrusted: ["inter"]))
        let yearAgo = Int(Date().timeIntervalSince1970) - 31_536_000
        #expect(try fixtures.opensslVerifies("recent", anchors: ["root"], untrusted: ["inter"], time: yearAgo))
        (status, trust, trustResult) = evaluateCertificate(
            try TrustFixtures.der(fixtures.pem["recent"]!), anchor: anchor)  // !: a fixture
        #expect(status == errSecSuccess && trustResult == .recoverableTrustFailure)
        status = retryAYearAgo(try #require(trust), &trustResult)
        #expect(status == errSecSuccess && trustResult == .unspecified)
    }

    /// Listing 3-3, "Evaluating trust" (OS X): create, evaluate, and act on the result type.
    func evaluate(_ certificates: [SecCertificate], anchors: [SecCertificate], verifyDate: Date? = nil) -> String {
        let policy = SecPolicyCreateSSL(true, "www.example.com" as CFString)
        var trust: SecTrust?
        guard SecTrustCreateWithCertificates(certificates as CFArray, policy, &trust) == errSecSuccess, let trust else {
            return "error"
        }
        _ = SecTrustSetAnchorCertificates(trust, anchors as CFArray)
        // Listing 3-4, "Setting an evaluation date".
        if let verifyDate { _ = SecTrustSetVerifyDate(trust, verifyDate as CFDate) }
        var result = SecTrustResultType.invalid
        guard SecTrustEvaluate(trust, &result) == errSecSuccess else { return "error" }
        switch result {
        case .proceed, .unspecified: return "trusted"
        case .recoverableTrustFailure:
            // Listing 3-5, "Recovering from a trust failure": an expired certificate is allowed on request.
            var error: CFError?
            _ = SecTrustEvaluateWithError(trust, &error)
            guard error?.code == Int(errSecCertificateExpired) else { return "recoverable" }
            _ = SecTrustSetOptions(trust, [.allowExpired, .allowExpiredRoot])
            guard SecTrustEvaluate(trust, &result) == errSecSuccess else { return "error" }
            return result == .unspecified ? "trusted when expired allowed" : "recoverable"
        case .deny, .fatalTrustFailure: return "denied"
        default: return "error"
        }
    }

    @Test("Listings 3-3, 3-4 and 3-5: evaluate, set an evaluation date, recover from an expired certificate")
    func desktopListings() throws {
        let fixtures = try TrustFixtures.get()
        let leaf = try fixtures.certificate("leaf")
        let inter = try fixtures.certificate("inter")
        let root = try fixtures.certificate("root")
        let recent = try fixtures.certificate("recent")
        #expect(evaluate([leaf, inter], anchors: [root]) == "trusted")
        #expect(evaluate([leaf, inter], anchors: []) == "recoverable")
        #expect(evaluate([try fixtures.certificate("badsig"), inter], anchors: [root]) == "denied")
        // 3-4: at a date past the leaf's validity it fails, allowed-expired it passes (3-5).
        let after2040 = Date(timeIntervalSince1970: 2_300_000_000)
        #expect(evaluate([leaf, inter], anchors: [root], verifyDate: after2040) == "trusted when expired allowed")
        // recent.example.com expired: wrong name for the SSL policy too, so recovery stops at the hostname.
        #expect(evaluate([recent, inter], anchors: [root]) != "trusted")
        #expect(
            evaluate([leaf, inter], anchors: [root], verifyDate: Date(timeIntervalSince1970: 1_893_456_000))
                == "trusted")
    }
}
