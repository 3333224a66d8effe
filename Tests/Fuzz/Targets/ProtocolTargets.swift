import Certificates
import CertificateManager
import Foundation
import Keychain
import Security

// Fuzz targets for protocol messages and generated inputs: OCSP responses, SCEP messages, trust chains,
// SecItem queries and Secure Transport records.

/// A root and a leaf (fuzz.example, OCSP responder named in its AIA) made once with openssl, valid to 2124, and a
/// good OCSP response for the leaf signed by the root: the fixed world the OCSP target judges responses in.
enum FuzzChain {
    static let rootPEM = """
-----BEGIN CERTIFICATE-----
MIIBjzCCATWgAwIBAgIULz3DcdGw9YQ4z1d5xF1ketJ2xDwwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJRnV6eiBSb290MCAXDTI2MTEyNzAxMTYwN1oYDzIxMjYxMTAz
MDExNjA3WjAUMRIwEAYDVQQDDAlGdXp6IFJvb3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAATebwp3XiC9B3YP9+kqxm7ZMilVhzCCoYprgJfO0tgdMmoa9Zpq0W0B
PGeXY7jjYmN/wpYli8ObNP8BnFpvbFfSo2MwYTAdBgNVHQ4EFgQUzKiLh3bhPdXx
e7M9EhG0ldaK6GQwHwYDVR0jBBgwFoAUzKiLh3bhPdXxe7M9EhG0ldaK6GQwDwYD
VR0TAQH/BAUwAwEB/zAOBgNVHQ8BAf8EBAMCAQYwCgYIKoZIzj0EAwIDSAAwRQIg
KVcEXCeFkme85XXaVt9r51a3FfFjINPmtmUl5yzfNc4CIQDO+UdgACXYBBWSi7KI
CMM7puGFfZEOVHWLhIPg5eArDg==
-----END CERTIFICATE-----
"""
    static let leafPEM = """
-----BEGIN CERTIFICATE-----
MIIB1jCCAXygAwIBAgIUFjCHfuvw9B0fKOSswyx6quzw/gkwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJRnV6eiBSb290MCAXDTI2MTEyNzAxMTYwOFoYDzIxMjUwNjIx
MDExNjA4WjAXMRUwEwYDVQQDDAxmdXp6LmV4YW1wbGUwWTATBgcqhkjOPQIBBggq
hkjOPQMBBwNCAASrAAJ9OS3fgICPRfZ3IkLBCRTu2SgRwkWiLdu3PjuQV54Xcgg9
6OcahyzBQupP6Ko28yHJaFEK7pXpOAn1ulyEo4GmMIGjMBcGA1UdEQQQMA6CDGZ1
enouZXhhbXBsZTAzBggrBgEFBQcBAQQnMCUwIwYIKwYBBQUHMAGGF2h0dHA6Ly8x
MjcuMC4wLjE6MS9vY3NwMBMGA1UdJQQMMAoGCCsGAQUFBwMBMB0GA1UdDgQWBBQ4
/q5crzva0SokQejSqWogUAop6TAfBgNVHSMEGDAWgBTMqIuHduE91fF7sz0SEbSV
1oroZDAKBggqhkjOPQQDAgNIADBFAiEA2bB+8cC39peX9H0zZnZpUY+n67fD9kaY
zmca3EivMRUCIB4GrAistsVx0j8RqTg0mrT7EIIkkswO39uTot+o4I+O
-----END CERTIFICATE-----
"""
    static let goodResponse = Data(base64Encoded: "MIICtAoBAKCCAq0wggKpBgkrBgEFBQcwAQEEggKaMIICljCBoqEWMBQxEjAQBgNVBAMMCUZ1enogUm9vdBgPMjAyNjExMjcwMTE2MDhaMHcwdTBNMAkGBSsOAwIaBQAEFD7ckgxBjhMmvS0Co6Utj1rnW3FtBBTMqIuHduE91fF7sz0SEbSV1oroZAIUFjCHfuvw9B0fKOSswyx6quzw/gmAABgPMjAyNjExMjcwMTE2MDhaoBEYDzIxMjUwNjIxMDExNjA4WjAKBggqhkjOPQQDAgNIADBFAiEAhz1fk53XXwXY6tSx7XNGyUOQcV/ChvhU3cO4YkJAN4ECIDTPDRY4Nq3WvToxXJs9ypDLV7TbaaHiMfBzSTGt0Nl2oIIBlzCCAZMwggGPMIIBNaADAgECAhQvPcNx0bD1hDjPV3nEXWR60nbEPDAKBggqhkjOPQQDAjAUMRIwEAYDVQQDDAlGdXp6IFJvb3QwIBcNMjYxMTI3MDExNjA3WhgPMjEyNjExMDMwMTE2MDdaMBQxEjAQBgNVBAMMCUZ1enogUm9vdDBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABN5vCndeIL0Hdg/36SrGbtkyKVWHMIKhimuAl87S2B0yahr1mmrRbQE8Z5djuONiY3/CliWLw5s0/wGcWm9sV9KjYzBhMB0GA1UdDgQWBBTMqIuHduE91fF7sz0SEbSV1oroZDAfBgNVHSMEGDAWgBTMqIuHduE91fF7sz0SEbSV1oroZDAPBgNVHRMBAf8EBTADAQH/MA4GA1UdDwEB/wQEAwIBBjAKBggqhkjOPQQDAgNIADBFAiApVwRcJ4WSZ7zlddpW32vnVrcV8WMg0+a2ZSXnLN81zgIhAM75R2AAJdgEFZKLsogIwzum4YV9kQ5UdYuEg+Dl4CsO") ?? Data()

    /// Whether the leaf is trusted for fuzz.example under an OCSP hard-fail policy, offline, with `response` stapled.
    static func evaluate(stapling response: Data?) -> Bool {
        let chain = certificates
        guard chain.count == 2 else { return false }
        let policies = [
            SecPolicyCreateSSL(true, "fuzz.example" as CFString),
            SecPolicyCreateRevocation(kSecRevocationOCSPMethod | kSecRevocationRequirePositiveResponse)!,  // !: a method is given
        ]
        var trust: SecTrust?
        guard SecTrustCreateWithCertificates([chain[1]] as CFArray, policies as CFArray, &trust) == errSecSuccess, let trust else { return false }
        SecTrustSetAnchorCertificates(trust, [chain[0]] as CFArray)
        SecTrustSetNetworkFetchAllowed(trust, false)
        if let response { SecTrustSetOCSPResponse(trust, response as CFData) }
        var error: CFError?
        return SecTrustEvaluateWithError(trust, &error)
    }

    /// Parsed again at each use, not kept in a global: LeakSanitizer cannot see the storage of a Data a global
    /// holds (its pointer is packed with enum tag bits) and would report it at exit.
    static var certificates: [SecCertificate] {
        ((try? Certificate.certificates(pemEncoded: rootPEM + "\n" + leafPEM)) ?? []).map(SecCertificate.init)
    }
}

extension FuzzTarget {
    /// A stapled OCSP response judged for the fixed leaf under a hard-fail revocation policy with no network:
    /// parsing, the CertID match, the signer and dates. A trusted result needs the response to say good.
    static let ocsp = FuzzTarget(
        name: "ocsp", summary: "stapled OCSP responses under a hard-fail revocation policy (SecTrustSetOCSPResponse)",
        seeds: { [FuzzChain.goodResponse] }
    ) { data in
        _ = FuzzChain.evaluate(stapling: data)
    }

    /// SCEP answers as enrollment reads them: a CertRep's PKCS#7 envelope, and GetCACert's certificate or
    /// degenerate PKCS#7.
    static let scep = FuzzTarget(
        name: "scep", summary: "SCEP CertRep and GetCACert answers (PKCS#7)"
    ) { data in
        let signers = FuzzChain.certificates.map(\.certificate)
        _ = try? SCEPReply(data, signers: signers, transactionID: "fuzz", nonce: [UInt8](repeating: 7, count: 16))
        _ = try? SCEPCertificateAuthority(data, fingerprint: nil)
    }

    /// A bundle of PEM certificates as a chain to evaluate, the last one anchored: the path builder and validator
    /// must end within their budget whatever the certificates say (libFuzzer's 10 s limit is the judge).
    static let trustChain = FuzzTarget(
        name: "trust-chain", summary: "the trust evaluator on a PEM bundle's certificates, the last as anchor",
        seeds: { [Data((FuzzChain.leafPEM + "\n" + FuzzChain.rootPEM).utf8)] }
    ) { data in
        let certificates = ((try? Certificate.certificates(pemEncoded: String(decoding: data, as: UTF8.self))) ?? []).prefix(12).map(SecCertificate.init)
        guard let anchor = certificates.last else { return }
        var trust: SecTrust?
        guard SecTrustCreateWithCertificates(certificates as CFArray, SecPolicyCreateSSL(true, "fuzz.example" as CFString), &trust) == errSecSuccess,
            let trust
        else { return }
        SecTrustSetAnchorCertificates(trust, [anchor] as CFArray)
        SecTrustSetNetworkFetchAllowed(trust, false)
        SecTrustSetKeychains(trust, [] as CFArray)
        var error: CFError?
        _ = SecTrustEvaluateWithError(trust, &error)
    }
}

/// A keychain of the fuzz process's own (a temporary file), which every generated query names: the fuzzer never
/// touches the user's keychains.
enum FuzzKeychain {
    static let keychain: SecKeychain? = {
        let path = NSTemporaryDirectory() + "fuzz-keychain-\(getpid()).db"
        guard (try? KeychainStore(path: path, accessGroups: ["fuzz"])) != nil else { return nil }
        var keychain: SecKeychain?
        return SecKeychainOpen(path, &keychain) == errSecSuccess ? keychain : nil
    }()
}

/// The bytes Secure Transport's read function serves: the fuzzer's input, then the end of the stream.
final class FuzzPeer {
    let bytes: [UInt8]
    var offset = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }
}

extension FuzzTarget {
    /// SecItemAdd, CopyMatching, Update and Delete with dictionaries generated from the input: keys from Apple's
    /// list, values of every type a query may hold (and some it may not). Any status is an answer; a crash or a
    /// result without success is not.
    static let secItemQuery = FuzzTarget(
        name: "secitem-query", summary: "SecItem* with generated query dictionaries, types and values mixed",
        seeds: { [Data([0, 0, 0, 1, 5, 97, 108, 105, 99, 101, 2, 0, 4, 109, 97, 105, 108]), Data([1, 0, 0, 3, 2, 0, 1])] }
    ) { data in
        guard let keychain = FuzzKeychain.keychain else { return }
        var input = FuzzInput(data)
        let keys: [CFString] = [
            kSecClass, kSecAttrAccount, kSecAttrService, kSecAttrLabel, kSecAttrAccessGroup, kSecAttrSynchronizable,
            kSecAttrAccessible, kSecAttrServer, kSecAttrPort, kSecAttrProtocol, kSecAttrPath, kSecAttrComment, kSecAttrGeneric,
            kSecAttrKeyType, kSecAttrKeySizeInBits, kSecAttrApplicationTag, kSecAttrIsPermanent, kSecMatchLimit,
            kSecReturnData, kSecReturnAttributes, kSecReturnRef, kSecReturnPersistentRef, kSecValueData, kSecValuePersistentRef,
            kSecMatchCaseInsensitive, kSecAttrCreationDate, kSecAttrType, kSecAttrCreator, kSecAttrIsInvisible,
            kSecUseDataProtectionKeychain, kSecMatchSearchList, kSecAttrAccessControl,
        ]
        let classes: [CFString] = [kSecClassGenericPassword, kSecClassInternetPassword, kSecClassCertificate, kSecClassKey, kSecClassIdentity]
        func value() -> Any {
            let kind = input.byte() % 9
            let length = Int(input.byte() % 24)
            switch kind {
            case 0: return String(decoding: input.take(length), as: UTF8.self)
            case 1: return input.take(length)
            case 2: return NSNumber(value: Int64(Int8(bitPattern: input.byte())) * 1000)
            case 3: return input.byte() & 1 == 1
            case 4: return Date(timeIntervalSinceReferenceDate: Double(input.byte()) * 86_400)
            case 5: return classes[Int(input.byte()) % classes.count]
            case 6: return [kSecMatchLimitAll, kSecMatchLimitOne, kSecAttrSynchronizableAny][Int(input.byte()) % 3]
            case 7: return [String(decoding: input.take(length), as: UTF8.self)]
            default: return [keychain]
            }
        }
        let operation = input.byte() % 4
        var query: [String: Any] = [:]
        while !input.isEmpty && query.count < 16 {
            query[keys[Int(input.byte()) % keys.count] as String] = value()
        }
        query[kSecUseKeychain as String] = keychain
        switch operation {
        case 0:
            var result: CFTypeRef?
            let status = SecItemAdd(query as CFDictionary, &result)
            precondition(status == errSecSuccess || result == nil, "a failed add returned a result")
        case 1:
            var result: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &result)
            precondition(status == errSecSuccess || result == nil, "a failed search returned a result")
        case 2:
            _ = SecItemUpdate(query as CFDictionary, [kSecValueData as String: Data("updated".utf8)] as CFDictionary)
        default:
            _ = SecItemDelete(query as CFDictionary)
        }
    }

    /// A Secure Transport client whose peer is the input: its read function serves the bytes, then the end of the
    /// stream; the handshake runs until it needs more or ends. Whatever the records say: a status, never a crash.
    static let secureTransport = FuzzTarget(
        name: "secure-transport", summary: "Secure Transport client handshakes against generated server records",
        seeds: { [Data([0x16, 0x03, 0x03, 0x00, 0x04, 0x02, 0x00, 0x00, 0x00]), Data([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28])] }
    ) { data in
        guard let context = SSLCreateContext(nil, .clientSide, .streamType) else { return }
        let peer = FuzzPeer([UInt8](data))
        let status: OSStatus = withExtendedLifetime(peer) {
            SSLSetIOFuncs(context, { connection, buffer, length in
                let peer = Unmanaged<FuzzPeer>.fromOpaque(connection).takeUnretainedValue()
                let count = min(length.pointee, peer.bytes.count - peer.offset)
                if count > 0 {
                    peer.bytes.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress! + peer.offset, byteCount: count) }  // !: non-empty
                }
                peer.offset += count
                length.pointee = count
                return count == 0 ? errSSLClosedGraceful : errSecSuccess
            }, { _, _, _ in errSecSuccess })  // everything the client writes is taken (*length stays)
            SSLSetConnection(context, Unmanaged.passUnretained(peer).toOpaque())
            SSLSetPeerDomainName(context, "fuzz.example", 12)
            SSLSetSessionOption(context, .breakOnServerAuth, true)
            var status = errSSLWouldBlock
            for _ in 0..<8 where status == errSSLWouldBlock || status == errSSLPeerAuthCompleted {
                status = SSLHandshake(context)
            }
            SSLClose(context)
            return status
        }
        precondition(status != errSecSuccess || peer.offset > 0, "a handshake completed without a byte from the peer")
    }
}
