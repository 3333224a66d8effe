import ArgumentParser
import CertificateManager
import Certificates
import Foundation
import Keychain
import Security

/// `security trust-store set|show|delete`: the certificate manager's private trust store.
struct TrustStoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust-store", abstract: "Manage the application's private trust store (CertificateManager).",
        discussion: """
            The store holds the CA certificates the access group trusts instead of the system's anchors. It is \
            created once: it cannot change until it is deleted.
            """,
        subcommands: [TrustStoreSet.self, TrustStoreShow.self, TrustStoreDelete.self])
}

/// `security client-identity set|show|delete`: the certificate manager's client identity.
struct ClientIdentityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client-identity",
        abstract: "Manage the application's client identity for mutual TLS (CertificateManager).",
        subcommands: [ClientIdentitySet.self, ClientIdentityShow.self, ClientIdentityDelete.self])
}

struct TrustStoreSet: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Create the private trust store from CA certificate files.",
        discussion: """
            Each file is DER or PEM (a PEM file may hold several certificates). Only CA certificates are accepted. \
            When a store exists nothing changes and the command fails (exit 45): delete it first. Name the keychain \
            with --keychain (the certificate files take the positional arguments).
            """)

    @Argument(help: ArgumentHelp("CA certificate files (DER or PEM).", valueName: "certfile"))
    var files: [String]

    @OptionGroup var target: KeychainOptions

    func validate() throws {
        if files.isEmpty { throw ValidationError("At least one certificate file is required.") }
    }

    func run() throws {
        var certificates: [Certificate] = []
        for file in files {
            let found = Certificate.certificates(derOrPEM: try ManagedItems.read(file))
            guard !found.isEmpty else { throw Failure(reason: "\(file): not a DER or PEM certificate") }
            certificates += found
        }
        let manager = try ManagedItems.manager(target, creating: true)
        try ManagedItems.perform("trust-store set") { try manager.setCertificates(certificates) }
        let count = try ManagedItems.perform("trust-store set") { try manager.certificates.count }
        Console.output("Private trust store created: \(count) \(count == 1 ? "certificate" : "certificates").\n")
    }
}

struct TrustStoreShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Print the private trust store's certificates.",
        discussion: "No store is errSecItemNotFound (exit 44).")

    @OptionGroup var target: KeychainTarget

    func run() throws {
        let manager = try ManagedItems.manager(target, creating: false)
        let infos = try ManagedItems.perform("trust-store show") { try manager.appCertificatesInfo }
        guard !infos.isEmpty else {
            throw ManagedItems.missing("trust-store show", "private trust store", manager)
        }
        var text = "Private trust store (access group \"\(manager.accessGroup)\"): "
        text += "\(infos.count) \(infos.count == 1 ? "certificate" : "certificates")\n"
        for (index, info) in infos.enumerated() {
            text += "\nCertificate \(index + 1)\n" + CertificateInfoPrinter.text(info)
        }
        Console.output(text)
    }
}

struct TrustStoreDelete: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete the private trust store (and nothing else).",
        discussion: "No store is errSecItemNotFound (exit 44).")

    @OptionGroup var target: KeychainTarget

    func run() throws {
        try ManagedItems.delete(target, command: "trust-store delete", item: "private trust store") {
            try $0.deleteCertStore()
        }
    }
}

struct ClientIdentitySet: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Provision the client identity from a PKCS#12 file or a certificate and key.",
        discussion: """
            --pkcs12 FILE takes the password from -P, else from a prompt (one line of standard input when it is not \
            a terminal); a wrong password is errSecAuthFailed (exit 51). Or --certificate FILE --key FILE (DER or \
            PEM, the key unencrypted) with --chain FILE for the intermediates. When an identity exists nothing \
            changes and the command fails (exit 45): delete it first.
            """)

    @Option(help: ArgumentHelp("A PKCS#12 file with the certificate, its key and its chain.", valueName: "file"))
    var pkcs12: String?

    @Option(name: .customShort("P"), help: ArgumentHelp("The PKCS#12 password.", valueName: "password"))
    var password: String?

    @Option(help: ArgumentHelp("The identity's certificate (DER or PEM).", valueName: "file"))
    var certificate: String?

    @Option(help: ArgumentHelp("The certificate's private key (DER or PEM, unencrypted).", valueName: "file"))
    var key: String?

    @Option(help: ArgumentHelp("The intermediates above the certificate (DER or PEM).", valueName: "file"))
    var chain: String?

    @OptionGroup var target: KeychainTarget

    func validate() throws {
        switch (pkcs12, certificate, key) {
        case (.some, nil, nil):
            if chain != nil { throw ValidationError("--chain goes with --certificate and --key.") }
        case (nil, .some, .some):
            if password != nil { throw ValidationError("-P goes with --pkcs12.") }
        default:
            throw ValidationError("Give either --pkcs12 FILE or --certificate FILE --key FILE.")
        }
    }

    func run() throws {
        let manager: CertificateManager
        if let pkcs12 {
            let bytes = try ManagedItems.read(pkcs12)
            let password = try self.password ?? PasswordPrompt.readOne(prompt: "Password for \(pkcs12): ")
            manager = try ManagedItems.manager(target, creating: true)
            try ManagedItems.perform("client-identity set") {
                try manager.setClientIdentity(pkcs12: bytes, password: password)
            }
        } else if let certificate, let key {
            guard let leaf = Certificate.certificates(derOrPEM: try ManagedItems.read(certificate)).first else {
                throw Failure(reason: "\(certificate): not a DER or PEM certificate")
            }
            let privateKey: AsymmetricKey
            do { privateKey = try AsymmetricKey(privateKeyFile: ManagedItems.read(key)) } catch let failure as Failure {
                throw failure
            } catch {
                throw Failure(reason: "\(key): not an unencrypted private key (DER or PEM)")
            }
            var intermediates: [Certificate] = []
            if let chain {
                intermediates = Certificate.certificates(derOrPEM: try ManagedItems.read(chain))
                guard !intermediates.isEmpty else { throw Failure(reason: "\(chain): not a DER or PEM certificate") }
            }
            manager = try ManagedItems.manager(target, creating: true)
            try ManagedItems.perform("client-identity set") {
                try manager.setClientIdentity(
                    ClientIdentity(certificate: leaf, privateKey: privateKey), certificateChain: intermediates)
            }
        } else {
            return  // validate() allows no other combination
        }
        let name = try ManagedItems.perform("client-identity set") { try manager.clientIdentityCertificateInfo }
        Console.output("Client identity provisioned: \"\(name?.subjectSummary ?? "")\".\n")
    }
}

struct ClientIdentityShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Print the client identity's certificate and chain.",
        discussion: "No identity is errSecItemNotFound (exit 44). The private key is never printed.")

    @OptionGroup var target: KeychainTarget

    func run() throws {
        let manager = try ManagedItems.manager(target, creating: false)
        let chain = try ManagedItems.perform("client-identity show") { try manager.clientIdentityCertificateChain }
        guard let leaf = chain.first else {
            throw ManagedItems.missing("client-identity show", "client identity", manager)
        }
        let info = CertificateInfo(leaf)
        var text = "Client identity (access group \"\(manager.accessGroup)\")\n"
        text += CertificateInfoPrinter.text(info)
        let above = chain.dropFirst()
        text += "\nCertificate chain: \(above.count) above the identity's certificate\n"
        for (index, certificate) in above.enumerated() {
            let info = CertificateInfo(certificate)
            text +=
                "  \(index + 1)) \"\(info.subjectSummary ?? info.subject)\" issued by \"\(info.issuerSummary ?? info.issuer)\"\n"
            text += "     SHA-256: \(info.sha256Fingerprint)\n"
        }
        Console.output(text)
    }
}

struct ClientIdentityDelete: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete the client identity: its certificate, private key and chain.",
        discussion: "No identity is errSecItemNotFound (exit 44).")

    @OptionGroup var target: KeychainTarget

    func run() throws {
        try ManagedItems.delete(target, command: "client-identity delete", item: "client identity") {
            try $0.deleteClientIdentity()
        }
    }
}

/// What the certificate-manager commands share: the manager over the command's keychain, file reading, and
/// the manager's errors as failures.
enum ManagedItems {
    /// "no <item> in access group …", exiting with errSecItemNotFound's low byte (44) as the find and delete
    /// commands do when nothing matches.
    static func missing(_ command: String, _ item: String, _ manager: CertificateManager) -> Failure {
        Failure(
            reason: "\(command): no \(item) in access group \"\(manager.accessGroup)\"",
            exitStatus: Int32(UInt8(truncatingIfNeeded: errSecItemNotFound)))
    }

    /// A delete command: `delete` removes the item, saying whether there was one; none is ``missing(_:_:_:)``.
    static func delete(
        _ target: KeychainTarget, command: String, item: String, _ delete: (CertificateManager) throws -> Bool
    ) throws {
        let manager = try manager(target, creating: false)
        guard try perform(command, { try delete(manager) }) else { throw missing(command, item, manager) }
        let name = item.prefix(1).uppercased() + item.dropFirst()
        Console.output("\(name) deleted.\n")
    }

    /// A manager over the keychain and first access group the options name.
    static func manager(_ target: some KeychainSelection, creating: Bool) throws -> CertificateManager {
        try target.activate(creating: creating)
        do {
            return CertificateManager(keychain: try KeychainDefaults.store())
        } catch {
            throw Failure("SecKeychainOpen \(target.pathInEffect)", errSecIO)
        }
    }

    static func read(_ file: String) throws -> Data {
        do {
            return try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            throw Failure(reason: "\(file): cannot read the file")
        }
    }

    /// Runs a manager call; its error becomes `security: <operation>: <reason>` with an exit status of
    /// security(1)'s kind: 45 (errSecDuplicateItem) for an existing store or identity, 51 (errSecAuthFailed) for a
    /// wrong PKCS#12 password, 1 for the rest. The manager's errors never hold a password or key.
    static func perform<R>(_ operation: String, _ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as CertificateManagerError {
            let status: OSStatus
            switch error.code {
            case .certificateStoreImmutable, .clientIdentityExists: status = errSecDuplicateItem
            case .wrongPassword: status = errSecAuthFailed
            default: status = 1
            }
            let subject = error.certificateSubject.map { " (\"\($0)\")" } ?? ""
            throw Failure(
                reason: "\(operation): \(error.reason)\(subject)", exitStatus: Int32(UInt8(truncatingIfNeeded: status)))
        }
    }
}

/// A ``CertificateInfo`` as the `show` commands print it: one field per line, macOS's certificate-detail
/// names, dates in GMT.
enum CertificateInfoPrinter {
    static func text(_ info: CertificateInfo) -> String {
        let key = info.keySizeInBits.map { "\(info.keyType) \($0) bits" } ?? info.keyType
        var fields: [(String, String)] = [
            ("Subject Name", info.subject),
            ("Summary", info.subjectSummary ?? ""),
            ("Issuer Name", info.issuer),
            ("Serial Number", info.serialNumber),
            ("Not Valid Before", date(info.notValidBefore)),
            ("Not Valid After", date(info.notValidAfter)),
            ("SHA-256", info.sha256Fingerprint),
            ("SHA-1", info.sha1Fingerprint),
            ("Certificate Authority", info.isCertificateAuthority ? "Yes" : "No"),
            ("Public Key", key),
        ]
        if !info.subjectAlternativeNames.isEmpty {
            fields.append(("Alternative Names", info.subjectAlternativeNames.joined(separator: ", ")))
        }
        if !info.keyUsages.isEmpty { fields.append(("Key Usage", info.keyUsages.joined(separator: ", "))) }
        return fields.map { "    \(($0.0 + ":").padding(toLength: 23, withPad: " ", startingAt: 0))\($0.1)\n" }.joined()
    }

    static func date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
