import ArgumentParser
import Certificates
import Foundation
import Security

// macOS security(1)'s trust-settings commands, over the Security API's SecTrustSettings calls as Apple's tool is:
// add-trusted-cert, remove-trusted-cert, dump-trust-settings. The user's domain by default, the administrator's
// with -d (root writes it).

/// The -d / -s domain choice shared by the commands.
private func domain(admin: Bool, system: Bool = false) -> SecTrustSettingsDomain {
    system ? .system : admin ? .admin : .user
}

/// The one certificate of `path` (DER or PEM) as a SecCertificate.
private func secCertificate(_ path: String) throws -> SecCertificate {
    let certificates = try VerifyCert.certificates(in: path)
    guard certificates.count == 1 else { throw Failure(reason: "\(path): holds \(certificates.count) certificates, not one") }
    return SecCertificate(certificates[0])
}

struct AddTrustedCert: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-trusted-cert", abstract: "Add trust settings for a certificate.",
        discussion: """
            Sets the certificate's trust settings in the user's domain (the administrator's with -d), replacing \
            any it had. Without -p, -s or -e the setting applies to every use. The result type defaults to \
            trustRoot for a self-signed certificate and trustAsRoot for another.
            """)

    enum ResultName: String, ExpressibleByArgument, CaseIterable {
        case trustRoot, trustAsRoot, deny, unspecified
        var result: SecTrustSettingsResult {
            switch self {
            case .trustRoot: .trustRoot
            case .trustAsRoot: .trustAsRoot
            case .deny: .deny
            case .unspecified: .unspecified
            }
        }
    }

    enum PolicyName: String, ExpressibleByArgument, CaseIterable {
        case ssl, basic
    }

    @Flag(name: .customShort("d"), help: "Add to the administrator's trust settings; the default is the user's.")
    var admin = false

    @Option(name: .customShort("r"), help: ArgumentHelp("The result type.", valueName: "trustRoot|trustAsRoot|deny|unspecified"))
    var resultType: ResultName?

    @Option(name: .customShort("p"), help: ArgumentHelp("The policy the setting is limited to.", valueName: "ssl|basic"))
    var policy: PolicyName?

    @Option(name: .customShort("s"), help: ArgumentHelp("The SSL policy's hostname the setting is limited to.", valueName: "policyString"))
    var policyString: String?

    @Option(
        name: .customShort("e"),
        help: ArgumentHelp(
            "An error the setting allows: an errSec status, or certExpired, certNotValidYet, hostnameMismatch, untrustedRoot.",
            valueName: "allowedError"))
    var allowedError: String?

    @Argument(help: ArgumentHelp("The certificate, DER or PEM.", valueName: "certFile"))
    var certificateFile: String

    static let errorNames: [String: OSStatus] = [
        "certExpired": errSecCertificateExpired, "certNotValidYet": errSecCertificateNotValidYet,
        "hostnameMismatch": errSecHostNameMismatch, "untrustedRoot": errSecNotTrusted,
    ]

    func validate() throws {
        if policyString != nil, policy == .basic { throw ValidationError("-s is the ssl policy's hostname (-p ssl).") }
        if let allowedError, Self.errorNames[allowedError] == nil, OSStatus(allowedError) == nil {
            throw ValidationError("-e takes an errSec status or one of \(Self.errorNames.keys.sorted().joined(separator: ", ")).")
        }
    }

    func run() throws {
        let certificate = try secCertificate(certificateFile)
        var constraint: [String: Any] = [:]
        if let resultType { constraint[kSecTrustSettingsResult as String] = resultType.result.rawValue }
        switch policy {
        case .ssl?: constraint[kSecTrustSettingsPolicy as String] = SecPolicyCreateSSL(true, nil)
        case .basic?: constraint[kSecTrustSettingsPolicy as String] = SecPolicyCreateBasicX509()
        case nil: break
        }
        if let policyString { constraint[kSecTrustSettingsPolicyString as String] = policyString }
        if let allowedError {
            constraint[kSecTrustSettingsAllowedError as String] = Self.errorNames[allowedError] ?? OSStatus(allowedError)
        }
        let settings: CFTypeRef? = constraint.isEmpty ? nil : constraint as CFDictionary
        let status = SecTrustSettingsSetTrustSettings(certificate, domain(admin: admin), settings)
        guard status == errSecSuccess else { throw Failure("SecTrustSettingsSetTrustSettings", status) }
    }
}

struct RemoveTrustedCert: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove-trusted-cert", abstract: "Remove trust settings for a certificate.")

    @Flag(name: .customShort("d"), help: "Remove from the administrator's trust settings; the default is the user's.")
    var admin = false

    @Argument(help: ArgumentHelp("The certificate, DER or PEM.", valueName: "certFile"))
    var certificateFile: String

    func run() throws {
        let certificate = try secCertificate(certificateFile)
        let status = SecTrustSettingsRemoveTrustSettings(certificate, domain(admin: admin))
        guard status == errSecSuccess else { throw Failure("SecTrustSettingsRemoveTrustSettings", status) }
    }
}

struct DumpTrustSettings: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump-trust-settings", abstract: "Display contents of trust settings.")

    @Flag(name: .customShort("s"), help: "Display the system's trusted certificates (the CA bundle).")
    var system = false

    @Flag(name: .customShort("d"), help: "Display the administrator's trust settings; the default is the user's.")
    var admin = false

    func run() throws {
        let domain = domain(admin: admin, system: system)
        var array: CFArray?
        let status = SecTrustSettingsCopyCertificates(domain, &array)
        guard status == errSecSuccess, let certificates = array as? [SecCertificate] else {
            throw Failure("SecTrustSettingsCopyCertificates", status)
        }
        var text = "Number of trusted certs = \(certificates.count)\n"
        for (index, certificate) in certificates.enumerated() {
            text += "Cert \(index): \(SecCertificateCopySubjectSummary(certificate).map { $0 as String } ?? "")\n"
            var settings: CFArray?
            let copied = SecTrustSettingsCopyTrustSettings(certificate, domain, &settings)
            guard copied == errSecSuccess, let constraints = settings as? [[String: Any]] else {
                throw Failure("SecTrustSettingsCopyTrustSettings", copied)
            }
            text += "   Number of trust settings : \(constraints.count)\n"
            for (number, constraint) in constraints.enumerated() {
                text += "   Trust Setting \(number):\n"
                if let policy = constraint[kSecTrustSettingsPolicy as String] as? SecPolicy {
                    let properties = SecPolicyCopyProperties(policy) as? [String: Any]
                    let oid = properties?[kSecPolicyOid as String] as? String
                    text += "      Policy OID            : \(oid == kSecPolicyAppleSSL as String ? "SSL" : "Apple X509 Basic")\n"
                }
                if let string = constraint[kSecTrustSettingsPolicyString as String] as? String {
                    text += "      Policy String         : \(string)\n"
                }
                if let error = (constraint[kSecTrustSettingsAllowedError as String] as? NSNumber)?.int32Value {
                    let name = AddTrustedCert.errorNames.first { $0.value == error }?.key ?? "\(error)"
                    text += "      Allowed Error         : \(name)\n"
                }
                if let raw = (constraint[kSecTrustSettingsResult as String] as? NSNumber)?.uint32Value {
                    text += "      Result Type           : \(Self.resultName(raw))\n"
                }
            }
        }
        Console.output(text)
    }

    static func resultName(_ raw: UInt32) -> String {
        switch SecTrustSettingsResult(rawValue: raw) {
        case .trustRoot?: "kSecTrustSettingsResultTrustRoot"
        case .trustAsRoot?: "kSecTrustSettingsResultTrustAsRoot"
        case .deny?: "kSecTrustSettingsResultDeny"
        case .unspecified?: "kSecTrustSettingsResultUnspecified"
        default: "kSecTrustSettingsResultInvalid"
        }
    }
}
