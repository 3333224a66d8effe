import Foundation
import TestVectors
import Testing

/// `security add-trusted-cert`, `remove-trusted-cert`, `dump-trust-settings`, and what they do to `verify-cert`,
/// in a sandbox whose user domain is under its XDG data directory and whose administrator domain is a file of it.
@Suite("security trust settings")
struct TrustSettingsCommandTests {
    typealias Chain = VerifyCertTests.Chain

    /// Runs `security arguments` with the sandbox's administrator domain; file names (`.pem`, `.txt`) are the
    /// sandbox's.
    static func run(_ chain: Chain, _ arguments: [String]) throws -> Sandbox.Run {
        try chain.sandbox.run(
            arguments.map { $0.hasSuffix(".pem") || $0.hasSuffix(".txt") ? chain.dir + "/" + $0 : $0 }, environment: ["SECURITYSERVICES_ADMIN_TRUST_SETTINGS": chain.dir + "/admin-trust-settings.plist"])
    }

    static let verified = Sandbox.Run(status: 0, stdout: "...certificate verification successful.\n", stderr: "")
    static let silent = Sandbox.Run(status: 0, stdout: "", stderr: "")

    @Test("deny an intermediate: verify-cert fails with kSecTrustResultDeny; dump shows it; remove restores trust")
    func deny() throws {
        let chain = try Chain()
        let verify = ["verify-cert", "-c", "leaf.pem", "-c", "inter.pem", "-r", "root.pem"]
        #expect(try Self.run(chain, verify) == Self.verified)
        #expect(try Self.run(chain, ["add-trusted-cert", "-r", "deny", "-p", "ssl", "inter.pem"]) == Self.silent)
        #expect(try Self.run(chain, verify) == Self.verified, "limited to the SSL policy; verify-cert used basic")
        #expect(
            try Self.run(chain, verify + ["-p", "ssl", "-n", "www.example.com"])
                == Sandbox.Run(
                    status: 1, stdout: "", stderr: "Cert Verify Result: kSecTrustResultDeny\n  certificate 1 \"inter\": denied\n"))
        #expect(
            try Self.run(chain, ["dump-trust-settings"])
                == Sandbox.Run(
                    status: 0,
                    stdout: """
                        Number of trusted certs = 1
                        Cert 0: inter
                           Number of trust settings : 1
                           Trust Setting 0:
                              Policy OID            : SSL
                              Result Type           : kSecTrustSettingsResultDeny

                        """, stderr: ""))
        #expect(try Self.run(chain, ["remove-trusted-cert", "inter.pem"]) == Self.silent)
        #expect(try Self.run(chain, verify + ["-p", "ssl", "-n", "www.example.com"]) == Self.verified)
        let again = try Self.run(chain, ["remove-trusted-cert", "inter.pem"])
        #expect(again.status == 44, "errSecItemNotFound's low byte: \(again)")
        #expect(again.stderr.hasPrefix("security: SecTrustSettingsRemoveTrustSettings: "), "\(again)")
    }

    @Test("trust a root the CA bundle lacks: verify-cert without -r succeeds; an allowed error forgives an expired leaf")
    func trustRootAndAllowedError() throws {
        let chain = try Chain()
        let verify = ["verify-cert", "-c", "leaf.pem", "-c", "inter.pem"]
        #expect(try Self.run(chain, verify).status == 1)
        #expect(try Self.run(chain, ["add-trusted-cert", "root.pem"]) == Self.silent)
        #expect(try Self.run(chain, verify) == Self.verified)
        #expect(try Self.run(chain, ["dump-trust-settings"]).stdout.contains("Number of trust settings : 0"))
        // -r root.pem: the application's anchors only; the user's anchor adds nothing, but the root is one anyway.
        #expect(try Self.run(chain, verify + ["-r", "root.pem"]) == Self.verified)

        let expired = ["verify-cert", "-c", "expired.pem", "-c", "inter.pem", "-r", "root.pem"]
        #expect(try Self.run(chain, expired).status == 1)
        #expect(try Self.run(chain, ["add-trusted-cert", "-r", "unspecified", "-e", "certExpired", "expired.pem"]) == Self.silent)
        #expect(try Self.run(chain, expired) == Self.verified)
        let dump = try Self.run(chain, ["dump-trust-settings"])
        #expect(dump.stdout.contains("Number of trusted certs = 2"), "\(dump)")
        #expect(dump.stdout.contains("Allowed Error         : certExpired"), "\(dump)")
    }

    @Test("the administrator's domain with -d; the user's decision wins over it")
    func adminDomain() throws {
        let chain = try Chain()
        let verify = ["verify-cert", "-c", "leaf.pem", "-c", "inter.pem", "-r", "root.pem"]
        #expect(try Self.run(chain, ["add-trusted-cert", "-d", "-r", "deny", "root.pem"]) == Self.silent)
        #expect(try Self.run(chain, verify).stderr.hasPrefix("Cert Verify Result: kSecTrustResultDeny"))
        #expect(try Self.run(chain, ["dump-trust-settings", "-d"]).stdout.hasPrefix("Number of trusted certs = 1\nCert 0: Verify Root\n"))
        let user = try Self.run(chain, ["dump-trust-settings"])
        #expect(user.status != 0 && user.stderr.contains("SecTrustSettingsCopyCertificates: No Trust Settings were found."), "\(user)")
        #expect(try Self.run(chain, ["add-trusted-cert", "root.pem"]) == Self.silent)
        #expect(try Self.run(chain, verify) == Self.verified)
        let system = try Self.run(chain, ["dump-trust-settings", "-s"])
        #expect(system.status == 0)
        let count = system.stdout.split(separator: "\n").first.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
        #expect(count > 50, "the CA bundle's roots: \(system.stdout.prefix(80))")
    }

    @Test("bad input: errSecParam, a usage error or a read error, and nothing stored")
    func badInput() throws {
        let chain = try Chain()
        let trustRootOnIntermediate = try Self.run(chain, ["add-trusted-cert", "-r", "trustRoot", "inter.pem"])
        #expect(trustRootOnIntermediate.status == Int32(UInt8(truncatingIfNeeded: Int32(-50))), "\(trustRootOnIntermediate)")
        #expect(trustRootOnIntermediate.stderr.hasPrefix("security: SecTrustSettingsSetTrustSettings: "))
        #expect(try Self.run(chain, ["add-trusted-cert", "-e", "12345", "inter.pem"]).status != 0)
        #expect(try Self.run(chain, ["add-trusted-cert", "-e", "nonsense", "inter.pem"]).status == 64)
        #expect(try Self.run(chain, ["add-trusted-cert", "-p", "basic", "-s", "a.example.com", "inter.pem"]).status == 64)
        #expect(try Self.run(chain, ["add-trusted-cert", "missing.pem"]).stderr == "security: \(chain.dir)/missing.pem: cannot read the file\n")
        #expect(try Self.run(chain, ["add-trusted-cert", "index.txt"]).stderr == "security: \(chain.dir)/index.txt: not a DER or PEM certificate\n")
        #expect(try Self.run(chain, ["dump-trust-settings"]).status != 0, "nothing was stored")
    }
}
