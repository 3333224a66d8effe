import ArgumentParser
import Certificates
import Foundation
import Security
import LocalAuthentication

/// The private key labelled `label`, as a `SecKey` found in the keychain.
/// - Throws: ``Failure`` `SecKeychainSearchCopyNext` (exit 44) when there is none.
func privateKey(labelled label: String) throws -> SecKey {
    let query: [String: Any] = [
        kSecClass as String: kSecClassKey, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
        kSecAttrLabel as String: label, kSecReturnRef as String: true,
    ]
    var result: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    guard status == errSecSuccess else { throw Failure("SecKeychainSearchCopyNext", status) }
    guard let key = result as? SecKey else { throw Failure("SecItemCopyMatching", errSecInternalComponent) }
    return key
}

struct CreateKeypair: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create-keypair", abstract: "Create an asymmetric key pair in the keychain.",
        discussion: """
            Generates the pair with SecKeyCreateRandomKey and stores both halves, permanent, labelled NAME (the \
            name create-csr and the identity commands find the private key by). RSA 1024-4096 bits (default \
            2048) or EC 256, 384 or 521. A private key with that label already there is errSecDuplicateItem. \
            With --token com.apple.setoken the private key is made and held in the TPM (Apple's Secure Enclave \
            token: EC 256 only); the keychain keeps the TPM's encrypted blob. With --token and a PKCS#11 token's \
            URI the key pair is made on that token (EC 256), after its PIN, asked on the terminal or read from \
            standard input's first line. list-smartcards shows the tokens.
            """)

    enum Algorithm: String, ExpressibleByArgument, CaseIterable {
        case rsa, ec
    }

    @Option(name: .customShort("a"), help: ArgumentHelp("The algorithm.", valueName: "rsa|ec"))
    var algorithm: Algorithm = .rsa

    @Option(name: .customShort("s"), help: ArgumentHelp("The key size in bits.", valueName: "size"))
    var size: Int?

    @Option(name: .long, help: ArgumentHelp("The token that holds the private key (kSecAttrTokenID).", valueName: "token-id"))
    var token: String?

    @Argument(help: ArgumentHelp("The label of the new keys.", valueName: "name"))
    var name: String

    @OptionGroup var target: KeychainTarget

    func validate() throws {
        guard !name.isEmpty else { throw ValidationError("The key name cannot be empty.") }
    }

    func run() throws {
        try target.activate(creating: true)
        if (try? privateKey(labelled: name)) != nil {
            throw Failure("SecKeyCreateRandomKey (\(target.displayName))", errSecDuplicateItem)
        }
        let keyType = algorithm == .rsa ? kSecAttrKeyTypeRSA : kSecAttrKeyTypeECSECPrimeRandom
        let permanent: [String: Any] = [kSecAttrIsPermanent as String: true, kSecAttrLabel as String: name]
        var parameters: [String: Any] = [
            kSecAttrKeyType as String: keyType, kSecAttrKeySizeInBits as String: size ?? (algorithm == .rsa ? 2048 : 256),
            kSecAttrLabel as String: name, kSecPrivateKeyAttrs as String: permanent,
            kSecPublicKeyAttrs as String: permanent,
        ]
        if let token { parameters[kSecAttrTokenID as String] = token }
        if let token, token.hasPrefix("pkcs11:") {
            let context = LAContext()
            context.setCredential(try PasswordPrompt.readOnce(prompt: "PIN for the token"), type: .applicationPassword)
            parameters[kSecUseAuthenticationContext as String] = context
        }
        var error: Unmanaged<CFError>?
        guard SecKeyCreateRandomKey(parameters as CFDictionary, &error) != nil else {
            let failure = error?.takeRetainedValue() as? NSError
            let status = OSStatus(truncatingIfNeeded: failure?.code ?? Int(errSecParam))
            // A token that is not there is named by the reason (the status's message says only "not implemented").
            if status == errSecUnimplemented, token != nil, let reason = failure?.localizedDescription {
                throw Failure(reason: "SecKeyCreateRandomKey: \(reason)", exitStatus: Int32(UInt8(truncatingIfNeeded: status)))
            }
            throw Failure("SecKeyCreateRandomKey", status)
        }
    }
}

struct CreateCSR: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create-csr", abstract: "Create a PKCS#10 certificate signing request with a keychain key.",
        discussion: """
            Signs the request with the private key labelled NAME (see create-keypair) inside this process; the key \
            is not exported. The subject is OpenSSL's one-line form (/C=DE/O=Example/CN=host.example.com). PEM on \
            standard output unless -o and -f der say otherwise.
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case pem, der
    }

    enum DigestName: String, ExpressibleByArgument, CaseIterable {
        case sha256, sha384, sha512
        var digest: KeyDigest {
            switch self {
            case .sha256: .sha256
            case .sha384: .sha384
            case .sha512: .sha512
            }
        }
    }

    @Argument(help: ArgumentHelp("The label of the private key that signs.", valueName: "name"))
    var name: String

    @Option(name: .customShort("s"), help: ArgumentHelp("The subject.", valueName: "/CN=..."))
    var subject: String?

    @Option(name: .customLong("dns"), help: ArgumentHelp("A DNS subject alternative name (repeatable).", valueName: "name"))
    var dnsNames: [String] = []

    @Option(name: .customLong("ip"), help: ArgumentHelp("An IP address alternative name (repeatable).", valueName: "address"))
    var ipAddresses: [String] = []

    @Option(name: .customLong("email"), help: ArgumentHelp("An e-mail alternative name (repeatable).", valueName: "address"))
    var emails: [String] = []

    @Option(name: .customLong("uri"), help: ArgumentHelp("A URI alternative name (repeatable).", valueName: "uri"))
    var uris: [String] = []

    @Option(
        name: .customLong("challenge"),
        help: ArgumentHelp(
            "A challenge password attribute (other users' ps can see it: prefer --challenge-stdin).", valueName: "password"))
    var challenge: String?

    @Flag(help: "Read the challenge password from the first line of standard input (asked without echo on a terminal).")
    var challengeStdin = false

    @Option(name: .customLong("digest"), help: ArgumentHelp("The signature's digest.", valueName: "sha256|sha384|sha512"))
    var digest: DigestName = .sha256

    @Option(name: .customShort("f"), help: ArgumentHelp("The output format.", valueName: "pem|der"))
    var format: Format = .pem

    @Option(name: .customShort("o"), help: ArgumentHelp("Write to this file (default: standard output).", valueName: "outfile"))
    var output: String?

    @OptionGroup var target: KeychainTarget

    func run() throws {
        let attributes: [CertificateSigningRequest.NameAttribute]
        do {
            attributes = try subject.map { try CertificateSigningRequest.NameAttribute.parse(openSSLSubject: $0) } ?? []
        } catch {
            throw ValidationError("-s takes OpenSSL's one-line form, /TYPE=value/...")
        }
        if challenge != nil && challengeStdin { throw ValidationError("--challenge and --challenge-stdin exclude each other.") }
        let challengePassword = try challengeStdin ? PasswordPrompt.readOne(prompt: "challenge password: ") : challenge
        try target.activate(creating: false)
        let key = try privateKey(labelled: name)
        let names: [CertificateSigningRequest.AlternativeName] =
            dnsNames.map { .dns($0) } + ipAddresses.map { .ipAddress($0) } + emails.map { .email($0) } + uris.map { .uri($0) }
        let request: CertificateSigningRequest
        do {
            request = try CertificateSigningRequest(
                subject: attributes, alternativeNames: names, challengePassword: challengePassword, privateKey: key.key,
                digest: digest.digest)
        } catch let error as CertificateError {
            // The reason names the attribute or name at fault, never the challenge password.
            throw Failure(reason: "create-csr: \(error.reason)")
        }
        let bytes = format == .der ? request.derEncoded : Data(request.pemEncoded.utf8)
        if let output {
            guard FileManager.default.createFile(atPath: output, contents: bytes) else {
                throw Failure(reason: "\(output): cannot write the file")
            }
        } else {
            FileHandle.standardOutput.write(bytes)
        }
    }
}
