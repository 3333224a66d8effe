import ArgumentParser
import CertificateManager
import Foundation
import HardwareKeys
import Keychain
import SecurityBase
import Synchronization

/// `security enroll`: obtains the certificate manager's client identity from a SCEP server (RFC 8894) — a new RSA
/// key in the keychain, a request with the common name and challenge password, the CA's certificate stored with
/// the key — and prints the issued certificate. On failure nothing is stored.
struct Enroll: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enroll",
        abstract: "Obtain the client identity from a SCEP server (RFC 8894) and store it in the keychain.",
        discussion: """
            The challenge password is read from standard input with --challenge-stdin, else asked on the terminal \
            without echo; --no-challenge sends none. The identity is the certificate manager's (the keychain's \
            first access group). --tpm makes the key in the TPM; --token makes it on a PKCS#11 token (a URI \
            list-smartcards shows), after its PIN, asked on the terminal or read from standard input's next line \
            (after the challenge password's), and writes the issued certificate onto the token beside the key. \
            Exits 1 with "security: enroll: <error code>: <reason>" on failure.
            """)

    @Option(help: ArgumentHelp("The SCEP endpoint, http://host[:port]/path.", valueName: "url"))
    var url: String

    @Option(help: ArgumentHelp("The requested certificate's common name.", valueName: "name"))
    var commonName: String

    @Flag(help: "Read the challenge password from the first line of standard input.")
    var challengeStdin = false

    @Flag(help: "Send no challenge password.")
    var noChallenge = false

    @Option(help: ArgumentHelp("The RSA key size: 2048, 3072 or 4096.", valueName: "bits"))
    var keySize = 2048

    @Flag(help: "Make the key in the TPM (SECURITYSERVICES_TPM_TCTI, else /dev/tpmrm0): it never leaves it.")
    var tpm = false

    @Option(help: ArgumentHelp("Make the key on this PKCS#11 token (its URI): it never leaves it.", valueName: "token-id"))
    var token: String?

    @Option(
        help: ArgumentHelp("The CA certificate's SHA-256 fingerprint (hex, colons allowed), to pin it.", valueName: "hex"))
    var caFingerprint: String?

    @Option(help: ArgumentHelp("GetCACert's message: the CA's name, for servers that host several.", valueName: "name"))
    var caIdentifier: String?

    @Option(help: ArgumentHelp("Seconds one HTTP exchange may take.", valueName: "seconds"))
    var timeout = 30

    @Option(help: ArgumentHelp("Seconds between polls of a pending request.", valueName: "seconds"))
    var pollInterval = 60

    @Option(help: ArgumentHelp("Polls of a pending request before giving up.", valueName: "count"))
    var maxPolls = 10

    @OptionGroup var target: KeychainTarget

    func validate() throws {
        if challengeStdin && noChallenge {
            throw ValidationError("--challenge-stdin and --no-challenge exclude each other.")
        }
        if timeout <= 0 || pollInterval < 0 || maxPolls < 0 {
            throw ValidationError("--timeout must be positive, --poll-interval and --max-polls not negative.")
        }
        if tpm && token != nil {
            throw ValidationError("--tpm and --token exclude each other.")
        }
        if let caFingerprint, Self.bytes(hex: caFingerprint)?.count != 32 {
            throw ValidationError("--ca-fingerprint must be 32 bytes of hex (a SHA-256 fingerprint).")
        }
    }

    func run() throws {
        var challenge: String?
        if challengeStdin || !noChallenge {
            var password = try PasswordPrompt.readOnce(prompt: "challenge password")
            challenge = String(decoding: password, as: UTF8.self)
            password.resetBytes(in: 0..<password.count)
        }
        let keyLocation = try self.keyLocation()
        try target.activate(creating: true)
        let manager: CertificateManager
        do { manager = CertificateManager(keychain: try KeychainDefaults.store()) } catch {
            throw Failure(reason: "enroll: the keychain cannot be opened: \(error)")
        }
        let configuration = EnrollmentConfiguration(
            url: url, keySize: keySize, keyLocation: keyLocation, caIdentifier: caIdentifier, caFingerprint: caFingerprint.flatMap(Self.bytes),
            timeout: .seconds(timeout), pollingInterval: .seconds(pollInterval), maximumPollAttempts: maxPolls)
        let credentials = EnrollmentCredentials(commonName: commonName, challengePassword: challenge)

        let result: EnrollmentResult
        do {
            result = try waitFor { try await manager.enroll(configuration: configuration) { _ in credentials } }
        } catch let error as CertificateManagerError {
            throw Failure(reason: "enroll: \(error.code): \(error.reason)")
        } catch {
            throw Failure(reason: "enroll: \(error)")
        }
        print(result)
    }

    /// Where the key is made: for --token, the token the URI names and its PIN, asked now.
    private func keyLocation() throws -> EnrollmentKeyLocation {
        guard let token else { return tpm ? .tpm : .keychain }
        let found: PKCS11Token?
        do { found = try PKCS11Modules.shared().tokens().first { $0.tokenID == token } } catch let error as HardwareKeyError {
            throw Failure(reason: "enroll: enrollmentKeyUnavailable: the tokens cannot be listed: \(error.reason)")
        }
        guard let found else { throw Failure(reason: "enroll: enrollmentKeyUnavailable: no token \(token) is present") }
        var pin = try PasswordPrompt.readOnce(prompt: "PIN for the token")
        defer { pin.resetBytes(in: 0..<pin.count) }
        return .token(found, pin: SecretBytes(Array(pin)))
    }

    /// The issued certificate's summary, then its chain and where it is stored.
    private func print(_ result: EnrollmentResult) {
        let info = CertificateInfo(result.identity.certificate)
        let dates = ISO8601DateFormatter()
        var text = "enrolled: \"\(info.subjectSummary ?? info.subject)\"\n"
        text += "    subject: \(info.subject)\n"
        text += "    issuer: \(info.issuer)\n"
        text += "    serial: \(info.serialNumber)\n"
        text += "    not before: \(dates.string(from: info.notValidBefore))\n"
        text += "    not after: \(dates.string(from: info.notValidAfter))\n"
        text += "    key: \(info.keyType) \(info.keySizeInBits.map(String.init) ?? "?")\n"
        text += "    SHA-256: \(info.sha256Fingerprint)\n"
        for (index, certificate) in result.certificateChain.dropFirst().enumerated() {
            text += "    chain \(index + 1): \(CertificateInfo(certificate).subject)\n"
        }
        text += "    polls: \(result.polls)\n"
        text += "keychain: \"\(target.pathInEffect)\"\n"
        Console.output(text)
    }

    /// Hex (colons and spaces allowed) as bytes; nil for anything else.
    static func bytes(hex text: String) -> Data? {
        let digits = Array(text.filter { $0 != ":" && !$0.isWhitespace })
        guard digits.count.isMultiple(of: 2) else { return nil }
        var bytes = Data()
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(digits[index...index + 1]), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }
}
