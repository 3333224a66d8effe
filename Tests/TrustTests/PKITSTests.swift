import Certificates
import Foundation
import TestVectors
import Testing
import Trust

/// PKITS sections 4.1–4.16 through `TrustEvaluator` (basic X.509, the PKITS trust anchor only, CRLs required).
@Suite(.hostOnly) struct PKITSTests {
    /// `x509/PKITS_data` of the pinned cryptography-vectors package.
    static let data = VectorDirectory.root?.appendingPathComponent("x509/PKITS_data")
    /// 2020-06-01T00:00:00Z: inside every PKITS certificate's validity (2010–2030) and the CRLs' (nextUpdate
    /// 2030), after the expired ones' and before the not-yet-valid ones'.
    static let date = Date(timeIntervalSince1970: 1_590_969_600)

    /// One test's inputs: the leaf (the last certificate of its S/MIME message), the message's other
    /// certificates, its CRLs — all read by the `openssl` CLI (`smime -pk7out | pkcs7 -print_certs`).
    struct Inputs {
        let leaf: Certificate
        let intermediates: [Certificate]
        let crls: [CertificateRevocationList]
    }

    static func inputs(_ name: String) throws -> Inputs {
        let data = try #require(data, Comment(rawValue: VectorDirectory.missingReason))
        let message = data.appendingPathComponent("smime/Signed\(name).eml").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "openssl smime -pk7out -in \"$0\" | openssl pkcs7 -print_certs", message]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let pem = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "openssl could not read \(message)")
        let certificates = try Certificate.certificates(pemEncoded: pem)
        let leaf = try #require(certificates.last, "no certificate in \(message)")
        // Reversed: intermediates in any order.
        return Inputs(
            leaf: leaf, intermediates: certificates.dropLast().reversed(),
            crls: try CertificateRevocationList.crls(pemEncoded: pem))
    }

    static func anchor() throws -> Certificate {
        let data = try #require(data, Comment(rawValue: VectorDirectory.missingReason))
        return try Certificate(
            derEncoded: Data(contentsOf: data.appendingPathComponent("certs/TrustAnchorRootCertificate.crt")))
    }

    static func evaluate(_ test: PKITSCase) throws -> TrustResult {
        let inputs = try inputs(test.name)
        let evaluator = TrustEvaluator(
            anchors: [try anchor()], policies: [.basicX509], verificationDate: date,
            certificateRevocationLists: inputs.crls)
        return try evaluator.evaluate(inputs.leaf, intermediates: inputs.intermediates)
    }

    @Test("PKITS table covers every S/MIME test message, and agrees with the Valid/Invalid in each name")
    func tableIsComplete() throws {
        let data = try #require(Self.data, Comment(rawValue: VectorDirectory.missingReason))
        let files = try FileManager.default.contentsOfDirectory(atPath: data.appendingPathComponent("smime").path)
        let names = Set(files.map { String($0.dropFirst("Signed".count).dropLast(".eml".count)) })
        #expect(names == Set(pkitsCases.map(\.name)))
        #expect(pkitsCases.count == 224)
        #expect(Set(pkitsCases.map(\.number)).count == pkitsCases.count)
        for test in pkitsCases {
            if test.name.hasPrefix("Valid") { #expect(test.valid, "\(test)") }
            if test.name.hasPrefix("Invalid") { #expect(!test.valid, "\(test)") }
        }
        // Every certificate and CRL of the messages is a file of the certs/ and crls/ folders.
        let certs = try FileManager.default.contentsOfDirectory(atPath: data.appendingPathComponent("certs").path)
        let crls = try FileManager.default.contentsOfDirectory(atPath: data.appendingPathComponent("crls").path)
        let certificateFiles = try Set(certs.map { try Data(contentsOf: data.appendingPathComponent("certs/\($0)")) })
        let crlFiles = try Set(crls.map { try Data(contentsOf: data.appendingPathComponent("crls/\($0)")) })
        for name in ["InvalidRevokedCATest2", "ValidSeparateCertificateandCRLKeysTest19", "ValiddeltaCRLTest2"] {
            let inputs = try Self.inputs(name)
            for certificate in [inputs.leaf] + inputs.intermediates {
                #expect(certificateFiles.contains(certificate.derEncoded), "\(name): \(certificate)")
            }
            #expect(!inputs.crls.isEmpty)
            for crl in inputs.crls { #expect(crlFiles.contains(crl.derEncoded), "\(name)") }
        }
    }

    @Test("PKITS 4.1–4.16: every expected outcome, no false accept", arguments: pkitsCases)
    func pkits(_ test: PKITSCase) throws {
        let result = try Self.evaluate(test)
        if test.valid, pkitsKnownFalseRejects[test.number] != nil {
            #expect(!result.isTrusted, "\(test) now passes: remove it from pkitsKnownFalseRejects")
        } else {
            #expect(result.isTrusted == test.valid, "\(test): \(result)")
        }
        if result.isTrusted {
            // A trusted chain runs from the leaf to the anchor.
            #expect(result.chain.last == (try Self.anchor()))
            #expect(result.outcome == .trusted)
        } else {
            #expect(!result.reasons.isEmpty)
        }
    }
}

extension PKITSTests {
    /// The reason each kind of PKITS failure is reported under, on the certificate that fails, and Apple's
    /// classification of it.
    static let reasons: [(number: String, index: Int, reason: TrustFailureReason)] = [
        ("4.1.2", 1, .badSignature),  // the CA certificate's signature
        ("4.1.3", 0, .badSignature),  // the end entity's signature
        ("4.2.1", 1, .notYetValid),
        ("4.2.2", 0, .notYetValid),
        ("4.2.5", 1, .expired),
        ("4.2.6", 0, .expired),
        ("4.3.1", 0, .missingIssuer),  // no certificate of the issuer's name
        ("4.4.1", 0, .revocationUnavailable),  // no CRL
        ("4.4.2", 1, .revoked),
        ("4.4.3", 0, .revoked),
        ("4.6.1", 1, .basicConstraints),
        ("4.6.2", 1, .basicConstraints),
        ("4.6.5", 2, .pathLength),
        ("4.7.1", 1, .keyUsage),
        ("4.8.4", 0, .policyConstraints),
        ("4.13.2", 0, .nameConstraints),
        ("4.16.2", 0, .unhandledCriticalExtension),
    ]

    @Test("PKITS failures carry Apple's reason, on the failing certificate")
    func failureReasons() throws {
        for (number, index, reason) in Self.reasons {
            let test = try #require(pkitsCases.first { $0.number == number })
            let result = try Self.evaluate(test)
            #expect(result.statuses.count > index, "\(test): \(result)")
            guard result.statuses.count > index else { continue }
            #expect(result.statuses[index].reasons == [reason], "\(test): \(result)")
            #expect(
                result.outcome == (reason.isFatal ? .fatalTrustFailure : .recoverableTrustFailure), "\(test): \(result)"
            )
            #expect(
                result.statuses.enumerated().allSatisfy { $0.offset == index || $0.element.reasons.isEmpty },
                "\(test): \(result)")
        }
    }
}
