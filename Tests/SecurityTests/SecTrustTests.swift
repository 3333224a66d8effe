import Foundation
import Security
import Synchronization
import TestVectors
import Testing

@Suite("Security: SecPolicy and SecTrust", .isolatedKeychain(["com.example.trust"]))
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
        #expect(properties[kSecPolicyOid as String] as? String == "1.2.840.113635.100.1.21", "Apple's SecPolicy.list: Revocation, 21")
        #expect(SecPolicyCreateRevocation(kSecRevocationRequirePositiveResponse) == nil)
    }

    @Test("creation: one certificate or an array, one policy, an array or nil; anything else is errSecParam")
    func creation() throws {
        let fixtures = try TrustFixtures.get()
        let leaf = try fixtures.certificate("leaf")
        var trust: SecTrust?
        #expect(SecTrustCreateWithCertificates(leaf, nil, &trust) == errSecSuccess)
        var policies: CFArray?
        #expect(SecTrustCopyPolicies(try #require(trust), &policies) == errSecSuccess)
        let copied = try #require(policies as? [SecPolicy])
        #expect(copied == [SecPolicyCreateBasicX509()])
        var result = SecTrustResultType.proceed
        #expect(SecTrustGetTrustResult(trust!, &result) == errSecSuccess && result == .invalid)

        let ssl = SecPolicyCreateSSL(true, "www.example.com" as CFString)
        #expect(
            SecTrustCreateWithCertificates([leaf] as CFArray, [ssl, SecPolicyCreateBasicX509()] as CFArray, &trust)
                == errSecSuccess)
        #expect(SecTrustCopyPolicies(trust!, &policies) == errSecSuccess)
        #expect((policies as? [SecPolicy])?.count == 2)
        #expect(SecTrustSetPolicies(trust!, ssl) == errSecSuccess)
        #expect(SecTrustCopyPolicies(trust!, &policies) == errSecSuccess)
        #expect(policies as? [SecPolicy] == [ssl])
        #expect(SecTrustSetPolicies(trust!, "ssl" as CFString) == errSecParam)

        for bad: CFTypeRef in ["leaf" as CFString, [] as CFArray, [leaf, "x"] as CFArray, NSNumber(value: 1)] {
            #expect(SecTrustCreateWithCertificates(bad, nil, &trust) == errSecParam)
            #expect(trust == nil)
        }
        #expect(SecTrustCreateWithCertificates(leaf, "basic" as CFString, &trust) == errSecParam)
        #expect(SecTrustCreateWithCertificates(leaf, [ssl, leaf] as CFArray, &trust) == errSecParam)
        #expect(trust == nil)
    }

    @Test("a good chain is unspecified, as openssl verify says; chain, count, key, result and properties")
    func goodChain() throws {
        let fixtures = try TrustFixtures.get()
        #expect(
            try fixtures.opensslVerifies("leaf", anchors: ["root"], untrusted: ["inter"], hostname: "www.example.com"))
        // Leaf first, the others in any order, an unrelated certificate harmless.
        let trust = try makeTrust(
            fixtures, ["leaf", "leaf2", "root", "inter"],
            policies: SecPolicyCreateSSL(true, "www.example.com" as CFString))
        var result = SecTrustResultType.otherError
        #expect(SecTrustGetTrustResult(trust, &result) == errSecSuccess && result == .invalid)
        // Reading the chain evaluates first.
        #expect(SecTrustGetCertificateCount(trust) == 3)
        #expect(SecTrustGetTrustResult(trust, &result) == errSecSuccess && result == .unspecified)
        let chain = try #require(SecTrustCopyCertificateChain(trust) as? [SecCertificate])
        #expect(
            chain == [
                try fixtures.certificate("leaf"), try fixtures.certificate("inter"), try fixtures.certificate("root"),
            ])
        #expect(SecTrustGetCertificateAtIndex(trust, 2) == chain[2])
        #expect(SecTrustGetCertificateAtIndex(trust, 3) == nil)
        #expect(SecTrustGetCertificateAtIndex(trust, -1) == nil)
        let (outcome, code, _) = evaluate(trust)
        #expect(outcome == .unspecified && code == 0)
        var legacy = SecTrustResultType.invalid
        #expect(SecTrustEvaluate(trust, &legacy) == errSecSuccess && legacy == .unspecified)
        #expect(legacy.rawValue == 4)

        let key = try #require(SecTrustCopyKey(trust))
        let leafKey = try #require(SecCertificateCopyKey(try fixtures.certificate("leaf")))
        #expect(
            SecKeyCopyExternalRepresentation(key, nil).map { $0 as Data }
                == SecKeyCopyExternalRepresentation(leafKey, nil).map { $0 as Data })
        #expect(SecTrustCopyPublicKey(trust) != nil)

        let dictionary = try #require(SecTrustCopyResult(trust) as? [String: Any])
        #expect(dictionary[kSecTrustResultValue as String] as? UInt32 == 4)
        let date = try #require(dictionary[kSecTrustEvaluationDate as String] as? Date)
        #expect(abs(date.timeIntervalSinceNow) < 60)
        let details = try #require(dictionary[kSecTrustResultDetails as String] as? [[String: Any]])
        #expect(details.count == 3 && details.allSatisfy(\.isEmpty))
        let properties = try #require(SecTrustCopyProperties(trust) as? [[String: Any]])
        #expect(
            properties.map { $0[kSecPropertyTypeTitle as String] as? String } == [
                "www.example.com", "SecTrust Test Intermediate", "SecTrust Test Root",
            ])
        #expect(properties.allSatisfy { $0[kSecPropertyTypeError as String] == nil })
    }

    @Test("failures: exact result types and Apple's codes, each confirmed by openssl verify")
    func failures() throws {
        let fixtures = try TrustFixtures.get()
        let ssl = { (host: String) in SecPolicyCreateSSL(true, host as CFString) }

        // Expired leaf: recoverable, errSecCertificateExpired.
        #expect(try !fixtures.opensslVerifies("expired", anchors: ["root"], untrusted: ["inter"]))
        var (result, code, text) = evaluate(try makeTrust(fixtures, ["expired", "inter"]))
        #expect(result == .recoverableTrustFailure && code == -67818 && code == Int(errSecCertificateExpired))
        #expect(text == "“expired.example.com” certificate is expired")

        // Hostname mismatch: recoverable, errSecHostNameMismatch.
        #expect(
            try !fixtures.opensslVerifies("leaf", anchors: ["root"], untrusted: ["inter"], hostname: "www.example.net"))
        (result, code, text) = evaluate(try makeTrust(fixtures, ["leaf", "inter"], policies: ssl("www.example.net")))
        #expect(result == .recoverableTrustFailure && code == -67602)
        #expect(text == "“www.example.com” certificate name does not match input")
        // A "hostname" that is none matches nothing.
        (result, code, _) = evaluate(try makeTrust(fixtures, ["leaf", "inter"], policies: ssl("not a host name")))
        #expect(result == .recoverableTrustFailure && code == -67602)

        // Untrusted root: recoverable, errSecNotTrusted (with other anchors, and with the system's).
        #expect(try !fixtures.opensslVerifies("leaf", anchors: ["otherRoot"], untrusted: ["inter", "root"]))
        (result, code, text) = evaluate(try makeTrust(fixtures, ["leaf", "inter", "root"], anchors: ["otherRoot"]))
        #expect(result == .recoverableTrustFailure && code == -67843)
        #expect(text == "“SecTrust Test Root” certificate is not trusted")
        (result, code, _) = evaluate(try makeTrust(fixtures, ["leaf", "inter", "root"], anchors: nil))
        #expect(result == .recoverableTrustFailure && code == -67843)

        // Missing intermediate: recoverable, errSecCreateChainFailed.
        #expect(try !fixtures.opensslVerifies("leaf", anchors: ["root"]))
        (result, code, _) = evaluate(try makeTrust(fixtures, ["leaf"]))
        #expect(result == .recoverableTrustFailure && code == -25318)

        // Bad signature: fatal, errSecInvalidSignature.
        #expect(try !fixtures.opensslVerifies("badsig", anchors: ["root"], untrusted: ["inter"]))
        (result, code, text) = evaluate(try makeTrust(fixtures, ["badsig", "inter"]))
        #expect(result == .fatalTrustFailure && code == Int(errSecInvalidSignature))
        #expect(result.rawValue == 6)

        // Per-certificate properties and details name the failing certificate.
        let trust = try makeTrust(fixtures, ["expired", "inter"])
        let properties = try #require(SecTrustCopyProperties(trust) as? [[String: Any]])
        #expect(properties.count == 3)
        #expect(
            properties[0][kSecPropertyTypeError as String] as? String == "“expired.example.com” certificate is expired")
        #expect(properties[1][kSecPropertyTypeError as String] == nil)
        let details = try #require(SecTrustCopyResult(trust)?[kSecTrustResultDetails as String] as? [[String: Any]])
        #expect(details[0]["TemporalValidity"] as? Bool == false && details[1].isEmpty)
    }

    @Test("a missing intermediate is found later in the keychain")
    func keychainIntermediate() throws {
        let fixtures = try TrustFixtures.get()
        let before = try makeTrust(fixtures, ["leaf"])
        #expect(evaluate(before).0 == .recoverableTrustFailure)
        #expect(
            SecItemAdd([kSecValueRef as String: try fixtures.certificate("inter")] as CFDictionary, nil)
                == errSecSuccess)
        #expect(try fixtures.opensslVerifies("leaf", anchors: ["root"], untrusted: ["inter"]))
        let after = try makeTrust(fixtures, ["leaf"])
        #expect(evaluate(after).0 == .unspecified)
        #expect(SecTrustGetCertificateCount(after) == 3)
        // The settled result of the first trust is kept until its settings change.
        var result = SecTrustResultType.invalid
        #expect(SecTrustGetTrustResult(before, &result) == errSecSuccess && result == .recoverableTrustFailure)
        #expect(SecTrustSetPolicies(before, SecPolicyCreateBasicX509()) == errSecSuccess)
        #expect(SecTrustGetTrustResult(before, &result) == errSecSuccess && result == .invalid)
        #expect(evaluate(before).0 == .unspecified)
    }

    @Test("verify date: set and read back; an expired leaf passes at a date inside its validity")
    func verifyDate() throws {
        let fixtures = try TrustFixtures.get()
        let trust = try makeTrust(fixtures, ["expired", "inter"])
        #expect(abs(SecTrustGetVerifyTime(trust) - CFAbsoluteTimeGetCurrent()) < 60)
        #expect(evaluate(trust).0 == .recoverableTrustFailure)
        let inside = Date(timeIntervalSince1970: 1_593_561_600)  // 2020-07-01
        #expect(try fixtures.opensslVerifies("expired", anchors: ["root"], untrusted: ["inter"], time: 1_593_561_600))
        #expect(SecTrustSetVerifyDate(trust, inside as CFDate) == errSecSuccess)
        #expect(SecTrustGetVerifyTime(trust) == inside.timeIntervalSinceReferenceDate)
        #expect(evaluate(trust).0 == .unspecified)
        // Before the root's validity: not yet valid.
        #expect(SecTrustSetVerifyDate(trust, Date(timeIntervalSince1970: 1_500_000_000) as CFDate) == errSecSuccess)
        let (result, code, _) = evaluate(trust)
        #expect(result == .recoverableTrustFailure && code == Int(errSecCertificateNotValidYet))
        // A date no time_t holds cannot be evaluated: otherError and errSecParam, not a crash.
        #expect(SecTrustSetVerifyDate(trust, Date(timeIntervalSince1970: 1e300) as CFDate) == errSecSuccess)
        let (unusable, unusableCode, _) = evaluate(trust)
        #expect(unusable == .otherError && unusableCode == Int(errSecParam))
        var legacy = SecTrustResultType.invalid
        #expect(SecTrustEvaluate(trust, &legacy) == errSecSuccess && legacy == .otherError)
    }

    @Test("exceptions: copied after a failure, set on a new trust for the same leaf they give proceed")
    func exceptions() throws {
        let fixtures = try TrustFixtures.get()
        let first = try makeTrust(fixtures, ["expired", "inter"])
        #expect(evaluate(first).0 == .recoverableTrustFailure)
        let exceptions = try #require(SecTrustCopyExceptions(first))

        let second = try makeTrust(fixtures, ["expired", "inter"])
        #expect(SecTrustSetExceptions(second, exceptions))
        var result = SecTrustResultType.otherError
        #expect(SecTrustGetTrustResult(second, &result) == errSecSuccess && result == .invalid)
        let (outcome, code, _) = evaluate(second)
        #expect(outcome == .proceed && code == 0)
        #expect(outcome.rawValue == 1)

        // Another leaf with the same failure is not covered: the exceptions are refused.
        let other = try makeTrust(fixtures, ["expired2", "inter"])
        #expect(!SecTrustSetExceptions(other, exceptions))
        #expect(evaluate(other).0 == .recoverableTrustFailure)

        // A new failure on the same leaf is not covered.
        let renamed = try makeTrust(
            fixtures, ["expired", "inter"], policies: SecPolicyCreateSSL(true, "www.example.net" as CFString))
        #expect(SecTrustSetExceptions(renamed, exceptions))
        let (renamedOutcome, renamedCode, _) = evaluate(renamed)
        #expect(renamedOutcome == .recoverableTrustFailure && renamedCode == -67818)
        let details = try #require(SecTrustCopyResult(renamed)?[kSecTrustResultDetails as String] as? [[String: Any]])
        #expect(Set(details[0].keys) == ["TemporalValidity", "SSLHostname"])

        // A fatal failure is never covered.
        let bad = try makeTrust(fixtures, ["badsig", "inter"])
        #expect(evaluate(bad).0 == .fatalTrustFailure)
        let badExceptions = try #require(SecTrustCopyExceptions(bad))
        #expect(SecTrustSetExceptions(bad, badExceptions))
        #expect(evaluate(bad).0 == .fatalTrustFailure)

        // Nil and garbage clear the exceptions and say false.
        #expect(!SecTrustSetExceptions(second, nil))
        #expect(evaluate(second).0 == .recoverableTrustFailure)
        #expect(!SecTrustSetExceptions(second, Data("not exceptions".utf8) as CFData))
    }

    @Test("allow-expired: .allowExpired passes an expired leaf, .allowExpiredRoot an expired root")
    func allowExpired() throws {
        let fixtures = try TrustFixtures.get()
        let trust = try makeTrust(fixtures, ["expired", "inter"])
        #expect(SecTrustSetOptions(trust, .allowExpired) == errSecSuccess)
        #expect(evaluate(trust).0 == .unspecified)
        #expect(SecTrustSetOptions(trust, []) == errSecSuccess)
        #expect(evaluate(trust).0 == .recoverableTrustFailure)

        #expect(try !fixtures.opensslVerifies("underOldRoot", anchors: ["oldRoot"]))
        let old = try makeTrust(fixtures, ["underOldRoot"], anchors: ["oldRoot"])
        var (result, code, text) = evaluate(old)
        #expect(result == .recoverableTrustFailure && code == -67818)
        #expect(text == "“SecTrust Expired Root” certificate is expired")
        #expect(SecTrustSetOptions(old, .allowExpired) == errSecSuccess)
        (result, code, _) = evaluate(old)
        #expect(result == .recoverableTrustFailure && code == -67818)
        #expect(SecTrustSetOptions(old, [.allowExpired, .allowExpiredRoot]) == errSecSuccess)
        #expect(evaluate(old).0 == .unspecified)
        // Allowing expiry does not hide another failure.
        let bad = try makeTrust(fixtures, ["badsig", "inter"])
        #expect(SecTrustSetOptions(bad, [.allowExpired, .allowExpiredRoot]) == errSecSuccess)
        #expect(evaluate(bad).0 == .fatalTrustFailure)
    }

    /// A root of the system bundle that is valid for at least a day (as `openssl x509 -checkend` says).
    static func systemRoot() throws -> (SecCertificate, String) {
        let bundle = try String(contentsOfFile: "/etc/ssl/certs/ca-certificates.crt", encoding: .utf8)
        let temporary = try TemporaryDirectory("sectrust-system-root")
        let directory = temporary.url
        for block in bundle.components(separatedBy: "-----END CERTIFICATE-----").prefix(40) {
            guard let start = block.range(of: "-----BEGIN CERTIFICATE-----") else { continue }
            let pem = String(block[start.lowerBound...]) + "-----END CERTIFICATE-----\n"
            try Data(pem.utf8).write(to: directory.appendingPathComponent("root.pem"))
            guard
                try OpenSSLCLI.run(["x509", "-in", "root.pem", "-noout", "-checkend", "86400"], in: directory).status == 0,
                try OpenSSLCLI.run(
                    ["verify", "-CAfile", "/etc/ssl/certs/ca-certificates.crt", "root.pem"], in: directory
                ).status == 0,
                let certificate = SecCertificateCreateWithData(nil, try TrustFixtures.der(pem) as CFData)
            else { continue }
            return (certificate, pem)
        }
        throw TrustFixtures.Failure(description: "no valid root in the system bundle")
    }

    @Test("anchors: the system bundle by default; custom anchors replace it; anchors-only false adds it back")
    func anchors() throws {
        let fixtures = try TrustFixtures.get()
        let (systemRoot, _) = try Self.systemRoot()
        var trust: SecTrust?
        #expect(SecTrustCreateWithCertificates(systemRoot, SecPolicyCreateBasicX509(), &trust) == errSecSuccess)
        let system = try #require(trust)
        var custom: CFArray?
        #expect(SecTrustCopyCustomAnchorCertificates(system, &custom) == errSecSuccess && custom == nil)
        #expect(evaluate(system).0 == .unspecified)
        #expect(SecTrustGetCertificateCount(system) == 1)

        let ours = try fixtures.certificate("root")
        #expect(SecTrustSetAnchorCertificates(system, [ours] as CFArray) == errSecSuccess)
        #expect(SecTrustCopyCustomAnchorCertificates(system, &custom) == errSecSuccess)
        #expect(custom as? [SecCertificate] == [ours])
        let (result, code, _) = evaluate(system)
        #expect(result == .recoverableTrustFailure && code == -67843)
        #expect(SecTrustSetAnchorCertificatesOnly(system, false) == errSecSuccess)
        #expect(evaluate(system).0 == .unspecified)
        #expect(SecTrustSetAnchorCertificatesOnly(system, true) == errSecSuccess)
        #expect(evaluate(system).0 == .recoverableTrustFailure)
        #expect(SecTrustSetAnchorCertificates(system, nil) == errSecSuccess)
        #expect(SecTrustCopyCustomAnchorCertificates(system, &custom) == errSecSuccess && custom == nil)
        #expect(evaluate(system).0 == .unspecified)
        #expect(SecTrustSetAnchorCertificates(system, [ours, "x"] as CFArray) == errSecParam)

        // Our chain: its custom anchor still works with the system's added.
        let chain = try makeTrust(fixtures, ["leaf", "inter"])
        #expect(SecTrustSetAnchorCertificatesOnly(chain, false) == errSecSuccess)
        #expect(evaluate(chain).0 == .unspecified)
        // And an empty anchor list trusts nothing.
        #expect(SecTrustSetAnchorCertificates(chain, [] as CFArray) == errSecSuccess)
        #expect(evaluate(chain).0 == .recoverableTrustFailure)
    }

    @Test("network fetch and revocation: stored, soft-fail, hard-fail without a response")
    func networkAndRevocation() throws {
        let fixtures = try TrustFixtures.get()
        let trust = try makeTrust(fixtures, ["leaf", "inter"])
        var allowed: DarwinBoolean = false
        #expect(SecTrustGetNetworkFetchAllowed(trust, &allowed) == errSecSuccess && allowed.boolValue)
        #expect(SecTrustSetNetworkFetchAllowed(trust, false) == errSecSuccess)
        #expect(SecTrustGetNetworkFetchAllowed(trust, &allowed) == errSecSuccess && !allowed.boolValue)

        let offline = try #require(
            SecPolicyCreateRevocation(kSecRevocationUseAnyAvailableMethod | kSecRevocationNetworkAccessDisabled))
        let soft = try makeTrust(
            fixtures, ["leaf", "inter"], policies: [SecPolicyCreateBasicX509(), offline] as CFArray)
        #expect(SecTrustGetNetworkFetchAllowed(soft, &allowed) == errSecSuccess && !allowed.boolValue)
        #expect(evaluate(soft).0 == .unspecified)

        let hard = try #require(
            SecPolicyCreateRevocation(kSecRevocationUseAnyAvailableMethod | kSecRevocationRequirePositiveResponse))
        let required = try makeTrust(
            fixtures, ["leaf", "inter"], policies: [SecPolicyCreateBasicX509(), hard] as CFArray)
        let (result, code, _) = evaluate(required)
        #expect(result == .recoverableTrustFailure && code == Int(errSecIncompleteCertRevocationCheck))
        let details = try #require(SecTrustCopyResult(required)?[kSecTrustResultDetails as String] as? [[String: Any]])
        #expect(details.map { $0["RevocationResponseRequired"] as? Bool } == [false, false, nil])
    }

    @Test("many threads evaluating one trust and fresh ones at once agree")
    func concurrency() throws {
        let fixtures = try TrustFixtures.get()
        let shared = try makeTrust(
            fixtures, ["leaf", "inter"], policies: SecPolicyCreateSSL(true, "www.example.com" as CFString))
        let expired = try makeTrust(fixtures, ["expired", "inter"])
        let certificates = try ["leaf", "inter", "root"].map { try fixtures.certificate($0) }
        let results = Mutex<[SecTrustResultType]>([])
        DispatchQueue.concurrentPerform(iterations: 48) { index in
            var outcome: SecTrustResultType
            switch index % 3 {
            case 0: outcome = SecTrustEvaluateWithError(shared, nil) ? .unspecified : .otherError
            case 1:
                var result = SecTrustResultType.invalid
                _ = SecTrustEvaluate(expired, &result)
                outcome = result == .recoverableTrustFailure ? .unspecified : result
            default:
                var trust: SecTrust?
                _ = SecTrustCreateWithCertificates([certificates[0], certificates[1]] as CFArray, nil, &trust)
                _ = SecTrustSetAnchorCertificates(trust!, [certificates[2]] as CFArray)  // !: created just above
                outcome = SecTrustEvaluateWithError(trust!, nil) ? .unspecified : .otherError
            }
            results.withLock { $0.append(outcome) }
        }
        let all = results.withLock { $0 }
        #expect(all.count == 48 && all.allSatisfy { $0 == .unspecified })
    }

    @Test("SecTrustEvaluateAsyncWithError calls back on the queue with the result and the error")
    func async() async throws {
        let fixtures = try TrustFixtures.get()
        let queue = DispatchQueue(label: "com.example.trust.callback")
        for (names, trusted, expectedCode) in [(["leaf", "inter"], true, 0), (["expired", "inter"], false, -67818)] {
            let trust = try makeTrust(fixtures, names)
            let (ok, code): (Bool, Int) = await withCheckedContinuation { continuation in
                let status = SecTrustEvaluateAsyncWithError(trust, queue) { evaluated, ok, error in
                    dispatchPrecondition(condition: .onQueue(queue))
                    #expect(evaluated === trust)
                    continuation.resume(returning: (ok, error?.code ?? 0))
                }
                #expect(status == errSecSuccess)
            }
            #expect(ok == trusted && code == expectedCode)
        }
        // The caller's keychain is searched for a missing intermediate.
        #expect(
            SecItemAdd([kSecValueRef as String: try fixtures.certificate("inter")] as CFDictionary, nil)
                == errSecSuccess)
        let trust = try makeTrust(fixtures, ["leaf"])
        let ok: Bool = await withCheckedContinuation { continuation in
            _ = SecTrustEvaluateAsyncWithError(trust, queue) { _, ok, _ in continuation.resume(returning: ok) }
        }
        #expect(ok && SecTrustGetCertificateCount(trust) == 3)
    }
}
