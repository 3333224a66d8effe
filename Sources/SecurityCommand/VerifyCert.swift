import ArgumentParser
import Certificates
import Foundation
import Security
import TLS
import Trust

struct VerifyCert: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-cert", abstract: "Verify certificate(s).",
        discussion: """
            Evaluates the first -c certificate (the leaf; the others are intermediates, in any order) for the \
            policy, against the -r roots only when given, else the system's anchors (the distribution's CA bundle \
            and the administrator's anchors) and the certificates the user's and administrator's trust settings \
            trust; a certificate they deny fails the evaluation (kSecTrustResultDeny). Exit status 0 exactly when the result is Proceed or Unspecified; \
            otherwise 1, printing the result type and each failing certificate's reasons. Certificates and CRLs may \
            be DER or PEM. With --connect HOST:PORT the chain is the one the server presents in a TLS handshake \
            (SNI: -n's name, else HOST), -c files adding intermediates after it.
            """)

    enum PolicyName: String, ExpressibleByArgument, CaseIterable {
        case basic, ssl
    }

    enum RevocationMode: String, ExpressibleByArgument, CaseIterable {
        case ocsp, crl, require, offline, online
    }

    @Option(name: .customShort("c"), help: ArgumentHelp("A certificate: the leaf first, then intermediates.", valueName: "certFile"))
    var certificates: [String] = []

    @Option(
        name: .customLong("connect"),
        help: ArgumentHelp("Fetch the chain from a TLS server's handshake (IPv6 as [::1]:443).", valueName: "host:port"))
    var connect: String?

    @Option(name: .customShort("r"), help: ArgumentHelp("A root certificate; only these are anchors.", valueName: "rootCertFile"))
    var roots: [String] = []

    @Option(name: .customShort("p"), help: ArgumentHelp("The policy.", valueName: "basic|ssl"))
    var policy: PolicyName = .basic

    @Flag(name: .customShort("C"), help: "Use the client side of the SSL policy.")
    var client = false

    @Option(name: .customShort("d"), help: ArgumentHelp("The verification date, GMT.", valueName: "YYYY-MM-DD-hh:mm:ss"))
    var date: String?

    @Option(name: .customShort("n"), help: ArgumentHelp("The hostname the SSL policy checks.", valueName: "name"))
    var hostname: String?

    @Option(
        name: .customLong("service-domain"),
        help: ArgumentHelp(
            "The SIP service domain the leaf must carry (RFC 5922: sip: URIs, else DNS names, else the CN).",
            valueName: "domain"))
    var serviceDomain: String?

    @Flag(name: .customShort("L"), help: "Local only: no network access (revocation uses --crl files only).")
    var localOnly = false

    @Flag(name: .customShort("l"), help: "The leaf may be a CA certificate (accepted; leaves are never refused for it).")
    var leafIsCA = false

    @Flag(name: .customShort("q"), help: "Quiet: no output, only the exit status.")
    var quiet = false

    @Option(
        name: .customShort("R"),
        help: ArgumentHelp("Revocation checking (repeatable).", valueName: "ocsp|crl|require|offline|online"))
    var revocation: [RevocationMode] = []

    @Option(name: .customLong("crl"), help: ArgumentHelp("A CRL to check against, offline (repeatable).", valueName: "file"))
    var crls: [String] = []

    func validate() throws {
        guard !certificates.isEmpty || connect != nil else {
            throw ValidationError("At least one certificate (-c) or a server (--connect) is required.")
        }
        if let connect, Self.endpoint(connect) == nil { throw ValidationError("--connect takes host:port.") }
        if hostname != nil && policy != .ssl { throw ValidationError("-n takes the ssl policy (-p ssl).") }
        if hostname != nil && serviceDomain != nil {
            throw ValidationError("-n and --service-domain are exclusive: a peer is named one way.")
        }
        if serviceDomain?.isEmpty == true { throw ValidationError("--service-domain cannot be empty.") }
        if client && policy != .ssl { throw ValidationError("-C takes the ssl policy (-p ssl).") }
        if let date, Self.parseDate(date) == nil {
            throw ValidationError("-d takes a GMT date as YYYY-MM-DD-hh:mm:ss.")
        }
    }

    /// `host:port` or `[v6]:port`.
    static func endpoint(_ text: String) -> (host: String, port: UInt16)? {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]), port > 0 else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }

    static func parseDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "yyyy-MM-dd-HH:mm:ss"
        return formatter.date(from: text)
    }

    func run() throws {
        var chain = try certificates.flatMap { try Self.certificates(in: $0) }
        if let connect, let (host, port) = Self.endpoint(connect) {
            let name = hostname ?? host
            do {
                chain = try waitFor { try await TLSConnection.presentedCertificates(host: host, port: port, serverName: name) } + chain
            } catch let error as TLSError {
                throw Failure(reason: "verify-cert: \(connect): \(error.code): \(error.reason)")
            }
        }
        let anchors = try roots.flatMap { try Self.certificates(in: $0) }
        let lists = try crls.flatMap { try Self.crls(in: $0) }
        let policies: [TrustPolicy] =
            switch policy {
            case .basic: [.basicX509]
            case .ssl: [client ? .sslClient : .sslServer(hostname: hostname)]
            }
        var evaluator = TrustEvaluator(
            anchors: anchors.isEmpty ? SystemAnchors.all : anchors, policies: policies,
            verificationDate: date.flatMap(Self.parseDate), certificateRevocationLists: lists)
        evaluator.revocation = revocationPolicy()
        let result: TrustResult
        do {
            // The user's and administrator's trust settings, as SecTrust consults them: with -r roots only,
            // their anchors do not count (their denials and allowed errors do).
            let settings = try TrustSettingsDomains.current.snapshot()
            evaluator.trustSettings = anchors.isEmpty ? settings : settings.withoutAnchors()
            result = try evaluator.evaluate(chain[0], intermediates: Array(chain.dropFirst()))
        } catch let error as TrustError {
            throw Failure(reason: "verify-cert: \(error.reason)")
        }
        // The service domain, as the certificate manager checks it: after the chain, on the leaf.
        var reasons = result.statuses.map { $0.reasons.map(\.description) }
        if let serviceDomain, !ServiceDomain.matches(chain[0], domain: serviceDomain) {
            reasons[0].append("serviceDomainMismatch")
        }
        if reasons.allSatisfy(\.isEmpty) {
            if !quiet { Console.output("...certificate verification successful.\n") }
            return
        }
        if !quiet {
            var text = "Cert Verify Result: \(Self.resultName(result))\n"
            for (index, status) in result.statuses.enumerated() where !reasons[index].isEmpty {
                let name = status.certificate.subjectSummary ?? "certificate \(index)"
                // The named rules of the evaluator's own checks (web-PKI profile, name constraints), when any.
                let rules = status.rules.isEmpty ? "" : " (\(status.rules.joined(separator: ", ")))"
                text += "  certificate \(index) \"\(name)\": \(reasons[index].joined(separator: ", "))\(rules)\n"
            }
            Console.error(text)
        }
        // The result is printed above: exit 1 with nothing more.
        throw ExitCode.failure
    }

    /// Apple's name of the result of a failed evaluation: denied, fatal or recoverable.
    static func resultName(_ result: TrustResult) -> String {
        switch result.outcome {
        case .denied: "kSecTrustResultDeny"
        case .fatalTrustFailure: "kSecTrustResultFatalTrustFailure"
        default: "kSecTrustResultRecoverableTrustFailure"
        }
    }

    /// -R and -L as the evaluator's revocation checking; nil when none was asked for.
    func revocationPolicy() -> RevocationPolicy? {
        let modes = Set(revocation)
        guard !modes.isEmpty else { return nil }
        var methods: RevocationPolicy.Methods = []
        if modes.contains(.ocsp) { methods.insert(.ocsp) }
        if modes.contains(.crl) { methods.insert(.crl) }
        if methods.isEmpty { methods = [.ocsp, .crl] }
        return RevocationPolicy(
            methods: methods, requirePositiveResponse: modes.contains(.require),
            networkAccessAllowed: !localOnly && !modes.contains(.offline))
    }

    static func certificates(in path: String) throws -> [Certificate] {
        let certificates = Certificate.certificates(derOrPEM: try read(path))
        guard !certificates.isEmpty else { throw Failure(reason: "\(path): not a DER or PEM certificate") }
        return certificates
    }

    static func crls(in path: String) throws -> [CertificateRevocationList] {
        let data = try read(path)
        if let crl = try? CertificateRevocationList(derEncoded: data) { return [crl] }
        guard let crls = try? CertificateRevocationList.crls(pemEncoded: String(decoding: data, as: UTF8.self)),
            !crls.isEmpty
        else { throw Failure(reason: "\(path): not a DER or PEM CRL") }
        return crls
    }

    static func read(_ path: String) throws -> Data {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Failure(reason: "\(path): cannot read the file")
        }
        return data
    }
}
