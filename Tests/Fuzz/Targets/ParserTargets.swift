import KeychainWire
import Certificates
import Foundation
import Keychain
import Security
import Trust

extension FuzzTarget {
    /// DER and PEM certificates through `SecCertificateCreateWithData` and the Swift API, then every field Apple's
    /// calls read. A certificate that parses gives its own bytes back, and parses again to the same certificate.
    static let certificate = FuzzTarget(
        name: "certificate", summary: "SecCertificateCreateWithData, PEM bundles, every field",
    ) { data in
        if let certificate = SecCertificateCreateWithData(nil, data as CFData) {
            let copied = SecCertificateCopyData(certificate) as Data
            precondition(copied == data, "a parsed certificate does not give its DER back")
            precondition(SecCertificateCreateWithData(nil, copied as CFData) == certificate, "a certificate does not parse again to itself")
            _ = SecCertificateCopySubjectSummary(certificate)
            var name: CFString?
            _ = SecCertificateCopyCommonName(certificate, &name)
            var emails: CFArray?
            _ = SecCertificateCopyEmailAddresses(certificate, &emails)
            _ = SecCertificateCopyNormalizedIssuerContent(certificate, nil)
            _ = SecCertificateCopyNormalizedSubjectContent(certificate, nil)
            _ = SecCertificateCopyValues(certificate, nil, nil)
            _ = SecCertificateCopyLongDescription(nil, certificate, nil)
            _ = SecCertificateCopyKey(certificate)
        }
        _ = try? Certificate.certificates(pemEncoded: String(decoding: data, as: UTF8.self))
    }

    /// PKCS#12 files through `SecPKCS12Import`, with the first byte choosing among a few passphrases.
    static let pkcs12 = FuzzTarget(
        name: "pkcs12", summary: "SecPKCS12Import, with and without a passphrase",
    ) { data in
        var input = FuzzInput(data)
        let passphrase = ["", "password", "fuzz", "\u{0}"][Int(input.byte() % 4)]
        var items: CFArray?
        _ = SecPKCS12Import(input.rest() as CFData, [kSecImportExportPassphrase as String: passphrase] as CFDictionary, &items)
    }

    /// `SecKeyCreateWithData` for RSA and EC, public and private; a key made goes back to the same bytes.
    static let key = FuzzTarget(
        name: "key", summary: "SecKeyCreateWithData for every key type and class",
        seeds: { FuzzSeeds.keyRepresentations() }
    ) { data in
        var input = FuzzInput(data)
        let choice = input.byte()
        let type = choice & 1 == 0 ? kSecAttrKeyTypeRSA : kSecAttrKeyTypeECSECPrimeRandom
        let keyClass = choice & 2 == 0 ? kSecAttrKeyClassPublic : kSecAttrKeyClassPrivate
        let bytes = input.rest()
        let attributes = [kSecAttrKeyType as String: type, kSecAttrKeyClass as String: keyClass] as CFDictionary
        guard let key = SecKeyCreateWithData(bytes as CFData, attributes, nil) else { return }
        let representation = SecKeyCopyExternalRepresentation(key, nil) as Data?
        precondition(representation == bytes, "a key made from bytes gives other bytes back")
        _ = SecKeyCopyAttributes(key)
        _ = SecKeyCopyPublicKey(key)
    }

    /// CRLs, DER and PEM.
    static let crl = FuzzTarget(
        name: "crl", summary: "CertificateRevocationList, DER and PEM"
    ) { data in
        _ = try? CertificateRevocationList(derEncoded: data)
        _ = try? CertificateRevocationList.crls(pemEncoded: String(decoding: data, as: UTF8.self))
    }

    /// The keychain service's messages, as the daemon and the client decode them; a request that decodes encodes
    /// to bytes that decode again.
    static let keychainWire = FuzzTarget(
        name: "keychain-wire", summary: "KeychainWire requests and responses (securityd's protocol)",
        seeds: { FuzzSeeds.wireMessages() }
    ) { data in
        let bytes = [UInt8](data)
        if let request = try? KeychainWire.decodeRequest(bytes) {
            let again = KeychainWire.encode(request)
            precondition((try? KeychainWire.decodeRequest(again)) != nil, "a decoded request does not decode after encoding")
        }
        _ = try? KeychainWire.decodeResponse(bytes)
    }

    /// `SecItemImport` of anything: PEM sequences, DER certificates and keys, PKCS#12.
    static let itemImport = FuzzTarget(
        name: "item-import", summary: "SecItemImport of PEM, DER and PKCS#12 with the format found from the bytes",
        seeds: { FuzzSeeds.keyRepresentations().map { Data([0]) + $0.dropFirst() } }
    ) { data in
        var input = FuzzInput(data)
        let format = SecExternalFormat(rawValue: UInt32(input.byte() % 16)) ?? .formatUnknown
        var chosen = format
        var type = SecExternalItemType.itemTypeUnknown
        var items: CFArray?
        let status = SecItemImport(input.rest() as CFData, nil, &chosen, &type, [], nil, nil, &items)
        precondition((status == errSecSuccess) == (items != nil), "an import returns items exactly when it succeeds")
    }

    /// A trust-settings file as the store reads it.
    static let trustSettings = FuzzTarget(
        name: "trust-settings", summary: "TrustSettingsStore reading a settings file",
        seeds: { [Data("{}".utf8)] }
    ) { data in
        withTemporaryFile(data) { path in _ = try? TrustSettingsStore(path: path).entries() }
    }

    /// A keychain backup file restored into an empty keychain: refused or restored, never a crash.
    static let keychainBackup = FuzzTarget(
        name: "keychain-backup", summary: "KeychainStore.restore of a backup file",
        seeds: { [Data(#"{"format":"SecurityServices keychain backup","version":1,"items":[]}"#.utf8)] }
    ) { data in
        withTemporaryFile(data) { path in
            let directory = path + ".keychain"
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            guard let store = try? KeychainStore(path: directory + "/keychain.db", accessGroups: ["fuzz"]) else { return }
            _ = try? store.restore(from: URL(fileURLWithPath: path))
        }
    }
}

/// Runs `body` with `data` in a file of its own, removed after.
func withTemporaryFile(_ data: Data, _ body: (String) -> Void) {
    let path = NSTemporaryDirectory() + "fuzz-\(UUID().uuidString)"
    guard FileManager.default.createFile(atPath: path, contents: data) else { return }
    defer { try? FileManager.default.removeItem(atPath: path) }
    body(path)
}
