import ArgumentParser
import Certificates
import Foundation
import Security
import Trust

/// An identity of the keychain (a certificate paired with its private key) and the persistent reference that
/// names both halves.
struct StoredIdentity: SelectableItem {
    let identity: SecIdentity
    let reference: Data
    let label: String?

    var certificate: Certificate { identity.certificate.certificate }
    var sha1Hex: String { Hex.upper(certificate.sha1Fingerprint) }
    /// The name find-identity prints: the subject summary, else the label.
    var displayName: String { certificate.subjectSummary ?? label ?? "" }

    /// The label of the identity's private key item (found by its application label, the certificate's
    /// public-key hash), or nil.
    func privateKeyLabel() -> String? {
        let query: [String: Any] = [
            kSecClass as String: kSecClassKey, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
            kSecAttrApplicationLabel as String: certificate.publicKeyHash, kSecReturnAttributes as String: true,
        ]
        var result: CFTypeRef?
        guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess else { return nil }
        return (result as? [String: Any])?[kSecAttrLabel as String] as? String
    }

    func matches(name: String) -> Bool {
        label?.contains(name) == true || certificate.subjectSummary?.contains(name) == true
    }

    /// Every identity on the smart cards (PKCS#11 tokens) in view, as `kSecClassIdentity` in the token access group
    /// returns them; none when no module loads.
    static func onTokens() -> [StoredIdentity] {
        let query: [String: Any] = [
            kSecClass as String: kSecClassIdentity, kSecAttrAccessGroup as String: kSecAttrAccessGroupToken,
            kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnRef as String: true, kSecReturnAttributes as String: true,
        ]
        var result: CFTypeRef?
        guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess, let array = result as? [[String: Any]] else { return [] }
        return array.compactMap { item in
            (item[kSecValueRef as String] as? SecIdentity).map {
                StoredIdentity(identity: $0, reference: Data(), label: item[kSecAttrLabel as String] as? String)
            }
        }
    }

    /// Every identity, as `kSecClassIdentity` with `kSecMatchLimitAll` returns them.
    static func all() throws -> [StoredIdentity] {
        let query: [String: Any] = [
            kSecClass as String: kSecClassIdentity, kSecMatchLimit as String: kSecMatchLimitAll,
            kSecReturnRef as String: true, kSecReturnPersistentRef as String: true,
            kSecReturnAttributes as String: true, kSecAttrSynchronizable as String: kSecAttrSynchronizableAny,
        ]
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return [] }
        guard status == errSecSuccess, let array = result as? [[String: Any]] else {
            throw Failure("SecItemCopyMatching", status == errSecSuccess ? errSecInternalComponent : status)
        }
        return try array.map { item in
            guard let identity = item[kSecValueRef as String] as? SecIdentity,
                let reference = item[kSecValuePersistentRef as String] as? Data
            else { throw Failure("SecItemCopyMatching", errSecInternalComponent) }
            return StoredIdentity(
                identity: identity, reference: reference, label: item[kSecAttrLabel as String] as? String)
        }
    }
}

struct FindIdentity: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find-identity", abstract: "Find an identity (certificate + private key).",
        discussion: """
            Lists the identities as macOS does: the SHA-1 hash and name of each, then those that are valid. An \
            identity is valid when its certificate is trusted now under the basic X.509 policy: a path through the \
            keychain's certificates to the system's anchors (the distribution's CA bundle and the administrator's \
            anchors). An invalid one is listed with the reason (CSSMERR_TP_CERT_EXPIRED, \
            CSSMERR_TP_CERT_NOT_VALID_YET, CSSMERR_TP_NOT_TRUSTED, CSSMERR_TP_CERT_REVOKED, ...).
            """)

    @Flag(name: .customShort("v"), help: "Show valid identities only.")
    var validOnly = false

    @Option(name: .customShort("s"), help: ArgumentHelp("Match on a name the label or common name contains.", valueName: "string"))
    var name: String?

    @OptionGroup var target: KeychainTarget

    /// The reason an identity's certificate is not trusted now, in macOS's CSSM words, or nil when it is.
    static func problem(_ certificate: Certificate, intermediates: [Certificate]) -> String? {
        guard let result = try? TrustEvaluator(anchors: SystemAnchors.all).evaluate(certificate, intermediates: intermediates)
        else { return "CSSMERR_TP_VERIFY_ACTION_FAILED" }
        let reasons = result.reasons
        if reasons.isEmpty { return nil }
        if reasons.contains(.revoked) { return "CSSMERR_TP_CERT_REVOKED" }
        if reasons.contains(.expired) { return "CSSMERR_TP_CERT_EXPIRED" }
        if reasons.contains(.notYetValid) { return "CSSMERR_TP_CERT_NOT_VALID_YET" }
        if reasons.contains(.untrustedRoot) || reasons.contains(.missingIssuer) { return "CSSMERR_TP_NOT_TRUSTED" }
        return "CSSMERR_TP_VERIFY_ACTION_FAILED"
    }

    func run() throws {
        try target.activate(creating: false)
        // The keychain's identities, then the smart cards' (as macOS lists a card's beside the keychains').
        let identities = try (StoredIdentity.all() + StoredIdentity.onTokens()).selected(name: name, hash: nil)
        let intermediates = try StoredCertificate.all().map(\.certificate)
        let problems = identities.map { Self.problem($0.certificate, intermediates: intermediates) }
        var text = "Policy: X.509 Basic\n"
        if !validOnly {
            text += "  Matching identities\n"
            for (index, stored) in identities.enumerated() {
                let problem = problems[index].map { " (\($0))" } ?? ""
                text += "  \(index + 1)) \(stored.sha1Hex) \"\(stored.displayName)\"\(problem)\n"
            }
            text += "     \(identities.count) identities found\n\n"
        }
        let valid = zip(identities, problems).filter { $0.1 == nil }.map(\.0)
        text += "  Valid identities only\n"
        for (index, stored) in valid.enumerated() {
            text += "  \(index + 1)) \(stored.sha1Hex) \"\(stored.displayName)\"\n"
        }
        text += "     \(valid.count) valid identities found\n"
        Console.output(text)
    }
}

struct DeleteIdentity: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete-identity", abstract: "Delete an identity: its certificate and its private key.",
        discussion: "Exactly one identity must match -c or -Z.")

    @OptionGroup var selection: SingleSelection

    @OptionGroup var target: KeychainTarget

    func run() throws {
        try target.activate(creating: false)
        let stored = try selection.one(of: StoredIdentity.all(), kind: "identities")
        let status = SecItemDelete(
            [kSecClass as String: kSecClassIdentity, kSecValuePersistentRef as String: stored.reference] as CFDictionary)
        guard status == errSecSuccess else { throw Failure("SecKeychainItemDelete", status) }
    }
}
