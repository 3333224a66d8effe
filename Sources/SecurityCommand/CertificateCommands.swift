import ArgumentParser
import Certificates
import Foundation
import Security

/// A certificate or an identity, as `-c name` and `-Z hash` select them.
protocol SelectableItem {
    /// `-c`: the label or the subject summary contains `name`.
    func matches(name: String) -> Bool
    /// `-Z`: the upper-case hex SHA-1 of the certificate's DER, as macOS prints and takes it.
    var sha1Hex: String { get }
}

extension Array where Element: SelectableItem {
    /// The items `name` and `hash` (either may be absent) select.
    func selected(name: String?, hash: String?) -> [Element] {
        filter { item in (name.map(item.matches(name:)) ?? true) && (hash.map { $0.uppercased() == item.sha1Hex } ?? true) }
    }
}

/// The certificates of the keychain, as the certificate commands see them: every certificate item with its
/// parsed certificate, filtered as macOS's `-c` and `-e` filter.
struct StoredCertificate: SelectableItem {
    let record: ItemRecord
    let certificate: Certificate

    /// Every certificate item, in the order added (items whose data is not a certificate are skipped).
    static func all() throws -> [StoredCertificate] {
        try Items.all(kSecClassCertificate, withData: true).compactMap { record in
            guard let der = record.data, let certificate = try? Certificate(derEncoded: der) else { return nil }
            return StoredCertificate(record: record, certificate: certificate)
        }
    }

    var label: String? {
        if case .text(let label)? = record.attributes[kSecAttrLabel as String] { return label }
        return nil
    }

    func matches(name: String) -> Bool {
        label?.contains(name) == true || certificate.subjectSummary?.contains(name) == true
    }

    /// `-e`: one of the certificate's e-mail addresses is `email` (case-insensitively).
    func matches(email: String) -> Bool {
        certificate.emailAddresses.contains { $0.caseInsensitiveCompare(email) == .orderedSame }
    }

    var sha1Hex: String { Hex.upper(certificate.sha1Fingerprint) }
}

extension Certificate {
    /// The certificates of a file's bytes: one DER certificate, or every CERTIFICATE block of PEM text; none when
    /// the bytes are neither.
    static func certificates(derOrPEM data: Data) -> [Certificate] {
        if let certificate = try? Certificate(derEncoded: data) { return [certificate] }
        return (try? Certificate.certificates(pemEncoded: String(decoding: data, as: UTF8.self))) ?? []
    }
}

enum Hex {
    static func upper(_ bytes: Data) -> String { bytes.map { String(format: "%02X", $0) }.joined() }
}

/// The `-c name` / `-Z hash` selection of the delete commands: exactly one item must match.
struct SingleSelection: ParsableArguments {
    @Option(name: .customShort("c"), help: ArgumentHelp("Match on the name (label or common name).", valueName: "name"))
    var name: String?

    @Option(name: .customShort("Z"), help: ArgumentHelp("Match on the SHA-1 hash (hex).", valueName: "hash"))
    var hash: String?

    func validate() throws {
        guard name != nil || hash != nil else { throw ValidationError("Either -c name or -Z hash is required.") }
        if let hash, hash.count != 40 || !hash.allSatisfy(\.isHexDigit) {
            throw ValidationError("-Z takes the 40 hex digits of a SHA-1 hash.")
        }
    }

    /// The one item selected from `candidates`.
    /// - Throws: ``Failure`` `SecKeychainSearchCopyNext` (exit 44) for none, or an ambiguity (exit 1).
    func one<Item: SelectableItem>(of candidates: [Item], kind: String) throws -> Item {
        let matching = candidates.selected(name: name, hash: hash)
        guard let first = matching.first else { throw Failure("SecKeychainSearchCopyNext", errSecItemNotFound) }
        guard matching.count == 1 else {
            throw Failure(
                reason: "\(name ?? hash ?? "") is ambiguous: \(matching.count) \(kind) match; select one with -Z hash")
        }
        return first
    }
}

struct FindCertificate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find-certificate", abstract: "Find a certificate item.",
        discussion: """
            Prints the first matching certificate's attributes (-a: every match); -p prints PEM instead, -Z the \
            SHA-256 and SHA-1 hashes first. Not found is errSecItemNotFound (exit 44).
            """)

    @Option(name: .customShort("c"), help: ArgumentHelp("Match on a name the label or common name contains.", valueName: "name"))
    var name: String?

    @Option(name: .customShort("e"), help: ArgumentHelp("Match on an e-mail address.", valueName: "emailAddress"))
    var email: String?

    @Flag(name: .customShort("a"), help: "Find all matching certificates, not just the first one.")
    var all = false

    @Flag(name: .customShort("p"), help: "Output the certificate in PEM format.")
    var pem = false

    @Flag(name: .customShort("Z"), help: "Print the SHA-256 and SHA-1 hashes of the certificate.")
    var hashes = false

    @OptionGroup var target: KeychainTarget

    func run() throws {
        try target.activate(creating: false)
        var found = try StoredCertificate.all().selected(name: name, hash: nil).filter { stored in
            email.map(stored.matches(email:)) ?? true
        }
        guard !found.isEmpty else { throw Failure("SecKeychainSearchCopyNext", errSecItemNotFound) }
        if !all { found = [found[0]] }
        for stored in found {
            if hashes {
                Console.output("SHA-256 hash: \(Hex.upper(stored.certificate.sha256Fingerprint))\n")
                Console.output("SHA-1 hash: \(stored.sha1Hex)\n")
            }
            Console.output(
                pem
                    ? stored.certificate.pemEncoded
                    : ItemPrinter.attributes(of: stored.record, keychain: target.pathInEffect))
        }
    }
}

struct DeleteCertificate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete-certificate", abstract: "Delete a certificate from a keychain.",
        discussion: "Exactly one certificate must match -c or -Z; an identity's private key is left alone.")

    @OptionGroup var selection: SingleSelection

    @OptionGroup var target: KeychainTarget

    func run() throws {
        try target.activate(creating: false)
        let stored = try selection.one(of: StoredCertificate.all(), kind: "certificates")
        let status = Items.delete(stored.record)
        guard status == errSecSuccess else { throw Failure("SecKeychainItemDelete", status) }
    }
}

struct ImportItems: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Import items into a keychain.",
        discussion: """
            A PKCS#12 file (-f pkcs12, or a .p12/.pfx name) adds its identity (certificate and private key) and the \
            other certificates it holds; an X.509 file (-f x509: DER, or PEM with one or more certificates) adds \
            its certificates. Certificates already in the keychain are skipped (a file with nothing new, or an \
            identity already there, is errSecDuplicateItem, exit 45). A wrong passphrase is errSecAuthFailed; nothing is imported then.
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case pkcs12, x509
    }

    @Argument(help: ArgumentHelp("The file to import.", valueName: "inputfile"))
    var file: String

    @Option(name: .customShort("f"), help: ArgumentHelp("The file's format.", valueName: "pkcs12|x509"))
    var format: Format?

    @Option(
        name: .customShort("P"),
        help: ArgumentHelp(
            "The PKCS#12 passphrase (as macOS's -P; other users' ps can see it: without -P it is asked without echo, or read from the first line of standard input).",
            valueName: "passphrase"))
    var passphrase: String?

    @OptionGroup var target: KeychainTarget

    var inferredFormat: Format {
        if let format { return format }
        return ["p12", "pfx"].contains(URL(fileURLWithPath: file).pathExtension.lowercased()) ? .pkcs12 : .x509
    }

    func run() throws {
        let bytes: Data
        do {
            bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            throw Failure(reason: "\(file): cannot read the file")
        }
        try target.activate(creating: true)
        switch inferredFormat {
        case .pkcs12: try importPKCS12(bytes)
        case .x509: try importCertificates(bytes)
        }
    }

    private func importPKCS12(_ bytes: Data) throws {
        var items: CFArray?
        let secret = try passphrase ?? PasswordPrompt.readOne(prompt: "Passphrase for \(file): ")
        let options = [kSecImportExportPassphrase as String: secret]
        let status = SecPKCS12Import(bytes as CFData, options as CFDictionary, &items)
        guard status == errSecSuccess, let imported = items as? [[String: Any]] else {
            throw Failure("SecKeychainItemImport", status == errSecSuccess ? errSecDecode : status)
        }
        var identities = 0
        var certificates = 0
        for item in imported {
            guard let identity = item[kSecImportItemIdentity as String] as? SecIdentity else { continue }
            var attributes: [String: Any] = [kSecValueRef as String: identity]
            if let label = item[kSecImportItemLabel as String] as? String { attributes[kSecAttrLabel as String] = label }
            let added = SecItemAdd(attributes as CFDictionary, nil)
            guard added == errSecSuccess else { throw Failure("SecKeychainItemImport", added) }
            identities += 1
            let leaf = identity.certificate
            for certificate in item[kSecImportItemCertChain as String] as? [SecCertificate] ?? [] where certificate != leaf {
                if try addCertificate(certificate) { certificates += 1 }
            }
        }
        report(identities: identities, certificates: certificates)
    }

    private func importCertificates(_ bytes: Data) throws {
        let certificates = Certificate.certificates(derOrPEM: bytes)
        guard !certificates.isEmpty else { throw Failure("SecKeychainItemImport", errSecUnknownFormat) }
        var added = 0
        for certificate in certificates where try addCertificate(SecCertificate(certificate)) { added += 1 }
        // As macOS: a file that adds nothing new is a duplicate.
        guard added > 0 else { throw Failure("SecKeychainItemImport", errSecDuplicateItem) }
        report(identities: 0, certificates: added)
    }

    /// Adds one certificate; false when it is already in the keychain.
    private func addCertificate(_ certificate: SecCertificate) throws -> Bool {
        let status = SecItemAdd([kSecValueRef as String: certificate] as CFDictionary, nil)
        if status == errSecDuplicateItem { return false }
        guard status == errSecSuccess else { throw Failure("SecKeychainItemImport", status) }
        return true
    }

    /// macOS's summary lines: "1 identity imported." / "2 certificates imported.".
    private func report(identities: Int, certificates: Int) {
        if identities > 0 { Console.output("\(identities) \(identities == 1 ? "identity" : "identities") imported.\n") }
        if certificates > 0 {
            Console.output("\(certificates) \(certificates == 1 ? "certificate" : "certificates") imported.\n")
        }
    }
}

struct ExportItems: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Export items from a keychain.",
        discussion: """
            -t certs writes every certificate (-c: those whose name matches): x509 is one DER certificate (PEM with \
            -p), pemseq a sequence of PEM blocks. -t identities writes one identity (-c or -Z selects it when there \
            are several) as a PKCS#12 file protected by -P (AES-256-CBC, PBKDF2, HMAC-SHA-256; --legacy for \
            3DES/RC2/SHA-1 readers), with the other certificates of the keychain that issued it.
            """)

    enum ItemType: String, ExpressibleByArgument, CaseIterable {
        case certs, identities
    }

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case x509, pemseq, pkcs12
    }

    @Option(name: .customShort("t"), help: ArgumentHelp("What to export.", valueName: "certs|identities"))
    var type: ItemType = .certs

    @Option(name: .customShort("f"), help: ArgumentHelp("The output format.", valueName: "x509|pemseq|pkcs12"))
    var format: Format?

    @Flag(name: .customShort("p"), help: "PEM-armour the output.")
    var pem = false

    @Option(
        name: .customShort("P"),
        help: ArgumentHelp(
            "The PKCS#12 passphrase (as macOS's -P; other users' ps can see it: without -P it is asked without echo, or read from the first line of standard input).",
            valueName: "passphrase"))
    var passphrase: String?

    @Flag(help: "Write a legacy PKCS#12 file (3DES, RC2, SHA-1 MAC).")
    var legacy = false

    @Option(name: .customShort("c"), help: ArgumentHelp("Export only items whose name matches.", valueName: "name"))
    var name: String?

    @Option(name: .customShort("Z"), help: ArgumentHelp("Export the identity with this SHA-1 hash.", valueName: "hash"))
    var hash: String?

    @Option(name: .customShort("o"), help: ArgumentHelp("Write to this file (default: standard output).", valueName: "outfile"))
    var output: String?

    @OptionGroup var target: KeychainTarget

    func validate() throws {
        switch (type, format ?? (type == .certs ? .pemseq : .pkcs12)) {
        case (.certs, .pkcs12): throw ValidationError("Certificates export as x509 or pemseq.")
        case (.identities, .x509), (.identities, .pemseq): throw ValidationError("Identities export as pkcs12.")
        case (.identities, .pkcs12):
            if passphrase?.isEmpty == true { throw ValidationError("A PKCS#12 export needs a passphrase.") }
        default: break
        }
    }

    func run() throws {
        try target.activate(creating: false)
        let bytes: Data
        switch type {
        case .certs: bytes = try exportCertificates()
        case .identities: bytes = try exportIdentity()
        }
        if let output {
            try Self.writePrivately(bytes, to: output)
        } else {
            FileHandle.standardOutput.write(bytes)
        }
    }

    /// Writes `bytes` to `path` readable by its owner alone from the start: created 0600 (a PKCS#12 file holds a
    /// private key; creating it with the umask's mode and narrowing it afterwards leaves a window), an existing file
    /// narrowed before a byte is written, a symbolic link refused.
    static func writePrivately(_ bytes: Data, to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(reason: "\(path): cannot write the file (\(String(cString: strerror(errno))))") }
        defer { close(fd) }
        guard fchmod(fd, 0o600) == 0 else { throw Failure(reason: "\(path): cannot make the file private") }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }  // !: not empty
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw Failure(reason: "\(path): cannot write the file (\(String(cString: strerror(errno))))") }
            written += count
        }
    }

    private func exportCertificates() throws -> Data {
        let selected = try StoredCertificate.all().selected(name: name, hash: nil)
        guard !selected.isEmpty else { throw Failure("SecKeychainSearchCopyNext", errSecItemNotFound) }
        if (format ?? .pemseq) == .x509 {
            guard selected.count == 1 else {
                throw Failure(reason: "x509 holds one certificate and \(selected.count) match; use -f pemseq or -c")
            }
            let certificate = selected[0].certificate
            return pem ? Data(certificate.pemEncoded.utf8) : certificate.derEncoded
        }
        return Data(selected.map(\.certificate.pemEncoded).joined().utf8)
    }

    private func exportIdentity() throws -> Data {
        // -P, else asked without echo (or the first line of standard input); never empty: the file holds a key.
        let exportPassphrase = passphrase ?? ((try? PasswordPrompt.readOne(prompt: "Passphrase for the PKCS#12 file: ")) ?? "")
        guard !exportPassphrase.isEmpty else {
            throw ValidationError("A PKCS#12 export needs a passphrase (-P, or typed at the prompt, or on standard input).")
        }
        let selected = try StoredIdentity.all().selected(name: name, hash: hash)
        guard let identity = selected.first else { throw Failure("SecKeychainSearchCopyNext", errSecItemNotFound) }
        guard selected.count == 1 else {
            throw Failure(reason: "\(selected.count) identities match; select one with -c name or -Z hash")
        }
        // The chain: the keychain's certificates, issuer by issuer up from the leaf.
        let others = try StoredCertificate.all().map(\.certificate).filter { $0 != identity.certificate }
        var chain: [Certificate] = []
        var current = identity.certificate
        while current.issuer.normalizedEncoded != current.subject.normalizedEncoded,
            let issuer = others.first(where: {
                $0.subject.normalizedEncoded == current.issuer.normalizedEncoded && !chain.contains($0)
            })
        {
            chain.append(issuer)
            current = issuer
        }
        // The friendly name: the private key's label (what create-csr and import name it by), else the
        // certificate's.
        let label = identity.privateKeyLabel() ?? identity.label
        do {
            let file = try PKCS12.export(
                certificate: identity.certificate, privateKey: identity.identity.privateKey.key, chain: chain,
                passphrase: exportPassphrase, label: label, legacy: legacy)
            return pem ? Data(PEM.encode(file, label: "PKCS12").utf8) : file
        } catch {
            throw Failure("SecItemExport", errSecParam)
        }
    }
}
