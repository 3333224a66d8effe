public import Certificates
public import Foundation
import Keychain
import SecurityBase
import KeychainItems
import HardwareKeys

// Apple's SecKey API (SecKey.h as Swift imports it) over the idiomatic ``AsymmetricKey`` of the Certificates
// module. Errors are CFErrors (NSError here) in NSOSStatusErrorDomain whose code is the Apple status.

/// An RSA or EC key, public or private.
public final class SecKey: @unchecked Sendable, Hashable, CustomStringConvertible {
    // @unchecked: every stored property is immutable; AsymmetricKey is Sendable.
    /// The key in the idiomatic Swift API (as ``SecCertificate/certificate`` is the certificate).
    public let key: AsymmetricKey
    /// The application tag and label the key was created (or found) with.
    let applicationTag: Data?
    let label: String?

    /// A `SecKey` for a key of the Swift API.
    public convenience init(_ key: AsymmetricKey) { self.init(key, applicationTag: nil, label: nil) }

    init(_ key: AsymmetricKey, applicationTag: Data?, label: String?) {
        self.key = key
        self.applicationTag = applicationTag
        self.label = label
    }

    public var description: String {
        "<SecKey \(key.type == .rsa ? "RSA" : "EC") \(key.isPrivate ? "private" : "public") \(key.sizeInBits) bits>"
    }

    /// Equal as Apple's CFEqual on keys: same type, same class, same key material.
    public static func == (lhs: SecKey, rhs: SecKey) -> Bool {
        if lhs === rhs { return true }
        guard lhs.key.type == rhs.key.type, lhs.key.isPrivate == rhs.key.isPrivate,
            lhs.key.isHeldElsewhere == rhs.key.isHeldElsewhere,
            let left = try? lhs.comparable.externalRepresentation(), let right = try? rhs.comparable.externalRepresentation()
        else { return false }
        return left == right
    }

    /// What equality compares: the key, or the public half of a key the keychain service holds.
    private var comparable: AsymmetricKey { key.isHeldElsewhere ? ((try? key.publicKey()) ?? key) : key }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(key.isPrivate)
        hasher.combine(try? key.publicKeySHA1())
    }
}

/// The operations `SecKeyIsAlgorithmSupported` asks about.
@frozen public enum SecKeyOperationType: Int, Sendable {
    case sign = 0
    case verify = 1
    case encrypt = 2
    case decrypt = 3
    case keyExchange = 4
}

/// An algorithm identifier: Apple's `CFString` values, exactly (checked against Security.framework's
/// constants: the PSS names carry the MGF1 digest and the salt length, and Apple's SHA-224 PSS names say 24).
public struct SecKeyAlgorithm: RawRepresentable, Hashable, @unchecked Sendable {
    // @unchecked: the NSString is immutable and never exposed for mutation.
    public let rawValue: CFString
    /// The name as a Swift string and what it means to the key layer, worked out once here: bridging a CFString
    /// and looking its name up cost about a microsecond per key operation, a twentieth of an RSA encryption.
    let name: String
    let operation: KeyOperation?

    public init(rawValue: CFString) {
        self.rawValue = rawValue
        name = rawValue as String
        operation = KeyOperation(algorithmName: name)
    }

    public init(_ rawValue: CFString) { self.init(rawValue: rawValue) }
    public static func == (lhs: SecKeyAlgorithm, rhs: SecKeyAlgorithm) -> Bool { lhs.name == rhs.name }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }

    public static let rsaSignatureRaw = SecKeyAlgorithm("algid:sign:RSA:raw")
    public static let rsaSignatureDigestPKCS1v15Raw = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15")
    public static let rsaSignatureDigestPKCS1v15SHA1 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA1")
    public static let rsaSignatureDigestPKCS1v15SHA224 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA224")
    public static let rsaSignatureDigestPKCS1v15SHA256 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA256")
    public static let rsaSignatureDigestPKCS1v15SHA384 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA384")
    public static let rsaSignatureDigestPKCS1v15SHA512 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA512")
    public static let rsaSignatureMessagePKCS1v15SHA1 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA1")
    public static let rsaSignatureMessagePKCS1v15SHA224 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA224")
    public static let rsaSignatureMessagePKCS1v15SHA256 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA256")
    public static let rsaSignatureMessagePKCS1v15SHA384 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA384")
    public static let rsaSignatureMessagePKCS1v15SHA512 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA512")
    public static let rsaSignatureDigestPSSSHA1 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA1:SHA1:20")
    public static let rsaSignatureDigestPSSSHA224 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA224:SHA224:24")
    public static let rsaSignatureDigestPSSSHA256 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA256:SHA256:32")
    public static let rsaSignatureDigestPSSSHA384 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA384:SHA384:48")
    public static let rsaSignatureDigestPSSSHA512 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA512:SHA512:64")
    public static let rsaSignatureMessagePSSSHA1 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA1:SHA1:20")
    public static let rsaSignatureMessagePSSSHA224 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA224:SHA224:24")
    public static let rsaSignatureMessagePSSSHA256 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA256:SHA256:32")
    public static let rsaSignatureMessagePSSSHA384 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA384:SHA384:48")
    public static let rsaSignatureMessagePSSSHA512 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA512:SHA512:64")
    public static let ecdsaSignatureRFC4754 = SecKeyAlgorithm("algid:sign:ECDSA:RFC4754")
    // The RFC 4754 (r||s) digest and message variants of Apple's 2023 SDKs.
    public static let ecdsaSignatureDigestRFC4754 = SecKeyAlgorithm("algid:sign:ECDSA:digest-RFC4754")
    public static let ecdsaSignatureDigestRFC4754SHA1 = SecKeyAlgorithm("algid:sign:ECDSA:digest-RFC4754:SHA1")
    public static let ecdsaSignatureDigestRFC4754SHA224 = SecKeyAlgorithm("algid:sign:ECDSA:digest-RFC4754:SHA224")
    public static let ecdsaSignatureDigestRFC4754SHA256 = SecKeyAlgorithm("algid:sign:ECDSA:digest-RFC4754:SHA256")
    public static let ecdsaSignatureDigestRFC4754SHA384 = SecKeyAlgorithm("algid:sign:ECDSA:digest-RFC4754:SHA384")
    public static let ecdsaSignatureDigestRFC4754SHA512 = SecKeyAlgorithm("algid:sign:ECDSA:digest-RFC4754:SHA512")
    public static let ecdsaSignatureMessageRFC4754SHA1 = SecKeyAlgorithm("algid:sign:ECDSA:message-RFC4754:SHA1")
    public static let ecdsaSignatureMessageRFC4754SHA224 = SecKeyAlgorithm("algid:sign:ECDSA:message-RFC4754:SHA224")
    public static let ecdsaSignatureMessageRFC4754SHA256 = SecKeyAlgorithm("algid:sign:ECDSA:message-RFC4754:SHA256")
    public static let ecdsaSignatureMessageRFC4754SHA384 = SecKeyAlgorithm("algid:sign:ECDSA:message-RFC4754:SHA384")
    public static let ecdsaSignatureMessageRFC4754SHA512 = SecKeyAlgorithm("algid:sign:ECDSA:message-RFC4754:SHA512")
    public static let ecdsaSignatureDigestX962 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962")
    public static let ecdsaSignatureDigestX962SHA1 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA1")
    public static let ecdsaSignatureDigestX962SHA224 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA224")
    public static let ecdsaSignatureDigestX962SHA256 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA256")
    public static let ecdsaSignatureDigestX962SHA384 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA384")
    public static let ecdsaSignatureDigestX962SHA512 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA512")
    public static let ecdsaSignatureMessageX962SHA1 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA1")
    public static let ecdsaSignatureMessageX962SHA224 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA224")
    public static let ecdsaSignatureMessageX962SHA256 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA256")
    public static let ecdsaSignatureMessageX962SHA384 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA384")
    public static let ecdsaSignatureMessageX962SHA512 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA512")
    public static let rsaEncryptionRaw = SecKeyAlgorithm("algid:encrypt:RSA:raw")
    public static let rsaEncryptionPKCS1 = SecKeyAlgorithm("algid:encrypt:RSA:PKCS1")
    public static let rsaEncryptionOAEPSHA1 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA1")
    public static let rsaEncryptionOAEPSHA224 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA224")
    public static let rsaEncryptionOAEPSHA256 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA256")
    public static let rsaEncryptionOAEPSHA384 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA384")
    public static let rsaEncryptionOAEPSHA512 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA512")
    // Apple's hybrid encryption (RSA-OAEP or ECIES with AES-GCM) and ECDH key exchange: named with Apple's values;
    // not run by this library yet, so SecKeyIsAlgorithmSupported says false and an operation asking for one is
    // errSecParam ("algorithm not supported"), as Apple answers for an algorithm a key does not support.
    public static let ecdhKeyExchangeCofactor = SecKeyAlgorithm("algid:keyexchange:ECDHC")
    public static let ecdhKeyExchangeCofactorX963SHA1 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA1")
    public static let ecdhKeyExchangeCofactorX963SHA224 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA224")
    public static let ecdhKeyExchangeCofactorX963SHA256 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA256")
    public static let ecdhKeyExchangeCofactorX963SHA384 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA384")
    public static let ecdhKeyExchangeCofactorX963SHA512 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA512")
    public static let ecdhKeyExchangeStandard = SecKeyAlgorithm("algid:keyexchange:ECDH")
    public static let ecdhKeyExchangeStandardX963SHA1 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA1")
    public static let ecdhKeyExchangeStandardX963SHA224 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA224")
    public static let ecdhKeyExchangeStandardX963SHA256 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA256")
    public static let ecdhKeyExchangeStandardX963SHA384 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA384")
    public static let ecdhKeyExchangeStandardX963SHA512 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA512")
    public static let eciesEncryptionCofactorVariableIVX963SHA224AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM-KDFIV")
    public static let eciesEncryptionCofactorVariableIVX963SHA256AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV")
    public static let eciesEncryptionCofactorVariableIVX963SHA384AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM-KDFIV")
    public static let eciesEncryptionCofactorVariableIVX963SHA512AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM-KDFIV")
    public static let eciesEncryptionCofactorX963SHA1AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA1:AESGCM")
    public static let eciesEncryptionCofactorX963SHA224AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM")
    public static let eciesEncryptionCofactorX963SHA256AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM")
    public static let eciesEncryptionCofactorX963SHA384AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM")
    public static let eciesEncryptionCofactorX963SHA512AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM")
    public static let eciesEncryptionStandardVariableIVX963SHA224AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM-KDFIV")
    public static let eciesEncryptionStandardVariableIVX963SHA256AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM-KDFIV")
    public static let eciesEncryptionStandardVariableIVX963SHA384AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM-KDFIV")
    public static let eciesEncryptionStandardVariableIVX963SHA512AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM-KDFIV")
    public static let eciesEncryptionStandardX963SHA1AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA1:AESGCM")
    public static let eciesEncryptionStandardX963SHA224AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM")
    public static let eciesEncryptionStandardX963SHA256AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM")
    public static let eciesEncryptionStandardX963SHA384AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM")
    public static let eciesEncryptionStandardX963SHA512AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM")
    public static let rsaEncryptionOAEPSHA1AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA1:AESGCM")
    public static let rsaEncryptionOAEPSHA224AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA224:AESGCM")
    public static let rsaEncryptionOAEPSHA256AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA256:AESGCM")
    public static let rsaEncryptionOAEPSHA384AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA384:AESGCM")
    public static let rsaEncryptionOAEPSHA512AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA512:AESGCM")
}

/// A parameter of ``SecKeyCopyKeyExchangeResult(_:_:_:_:_:)`` (Apple's `SecKeyKeyExchangeParameter`).
public struct SecKeyKeyExchangeParameter: RawRepresentable, Hashable, @unchecked Sendable {
    // @unchecked: the NSString is immutable and never exposed for mutation.
    public let rawValue: CFString
    public init(rawValue: CFString) { self.rawValue = rawValue }
    public static func == (lhs: Self, rhs: Self) -> Bool { (lhs.rawValue as String) == (rhs.rawValue as String) }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue as String) }

    public static let requestedSize = Self(rawValue: "requestedSize")
    public static let sharedInfo = Self(rawValue: "sharedInfo")
}

extension KeyOperation {
    /// What `algorithm` means to the key layer; nil for a name Apple does not define for RSA or EC keys.
    init?(_ algorithm: SecKeyAlgorithm) {
        guard let operation = algorithm.operation else { return nil }
        self = operation
    }
}

/// Errors of the SecKey functions: a KeyError's code becomes the Apple status.
enum KeyErrors {
    static func status(_ error: KeyError) -> OSStatus {
        switch error.code {
        // Apple's SecKeyRunAlgorithmAndCopyResult: "algorithm not supported by the key" is errSecParam.
        case .unsupportedAlgorithm: errSecParam
        case .verificationFailed: errSecVerifyFailed
        // Apple's SecKeyCreateWithData: "RSA public key creation from data failed" and the like are errSecParam.
        case .invalidKeyData: errSecParam
        case .backendFailure: errSecInternalComponent
        // Apple's SecKeyCopyExternalRepresentation of a key bound to a token: errSecUnimplemented.
        case .heldElsewhere: errSecUnimplemented
        default: errSecParam
        }
    }

    /// A retained CFError in NSOSStatusErrorDomain with `status` as code, stored through `error` when given.
    static func report(_ status: OSStatus, _ reason: String, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) {
        guard let error else { return }
        let value = NSError(domain: NSOSStatusErrorDomain, code: Int(status), userInfo: [NSLocalizedDescriptionKey: reason])
        error.pointee = Unmanaged.passRetained(value)
    }

    /// Runs `body`, turning a thrown error into a reported status and nil.
    static func run<T>(_ out: UnsafeMutablePointer<Unmanaged<CFError>?>?, _ body: () throws -> T) -> T? {
        out?.pointee = nil
        do {
            return try body()
        } catch let failure as KeyError {
            report(status(failure), failure.reason, out)
        } catch let failure as StatusError {
            report(failure.status, failure.reason, out)
        } catch let failure as KeychainError {
            // From the keychain: the service holding the key, or the check of the user before a TPM key is used.
            report(ItemTranslation.status(failure), failure.reason, out)
        } catch let failure as HardwareKeyError {
            // Apple's platforms without a Secure Enclave answer errSecUnimplemented.
            let status =
                switch failure.code {
                case .unavailable: errSecUnimplemented
                case .invalidKeyData: errSecDecode
                case .authenticationFailed: errSecAuthFailed
                case .interactionNotAllowed: errSecInteractionNotAllowed
                default: errSecInternalComponent
                }
            report(status, failure.reason, out)
        } catch {
            report(errSecInternalComponent, "\(error)", out)
        }
        return nil
    }
}

/// An Apple status with its reason, thrown inside this module.
struct StatusError: CodedError {
    let status: OSStatus
    let reason: String
    let location: ErrorLocation
    init(_ status: OSStatus, _ reason: String, file: StaticString = #fileID, line: UInt = #line) {
        self.status = status
        self.reason = reason
        location = ErrorLocation(fileID: file, line: line)
    }

    var code: OSStatus { status }
}

/// What a key-creation dictionary asks for.
struct KeyParameters {
    var type: KeyType
    var bits: Int?
    var isPrivate = true
    struct Side {
        var permanent = false
        var tag: Data?
        var label: String?
        /// `kSecAttrAccessControl`, given to the stored item.
        var accessControl: SecAccessControl?
    }
    var privateSide = Side()
    var publicSide = Side()
    /// `kSecAttrTokenID` is `kSecAttrTokenIDSecureEnclave`: the private key is made and held in the TPM.
    var holdsInSecureEnclave = false
    /// `kSecAttrTokenID` names a PKCS#11 token (its URI): the private key is made and held there.
    var pkcs11Token: String?
    /// The token's PIN: the password of `kSecUseAuthenticationContext`.
    var pin: SecretBytes?

    init(_ dictionary: NSDictionary, forCreation: Bool) throws {
        func value(_ key: CFString, in dictionary: NSDictionary) -> Any? { dictionary[key as String] }
        let typeCode: Int64?
        switch value(kSecAttrKeyType, in: dictionary) {
        case let text as String: typeCode = Int64(text)
        case let number as NSNumber: typeCode = number.int64Value
        case nil: throw StatusError(errSecParam, "kSecAttrKeyType is missing")
        default: typeCode = nil
        }
        guard let type = typeCode.flatMap(KeyType.init(keychainTypeCode:)) else {
            throw StatusError(errSecParam, "kSecAttrKeyType is not RSA or EC")
        }
        self.type = type
        switch value(kSecAttrKeySizeInBits, in: dictionary) {
        case nil: bits = nil
        case let text as String:
            guard let number = Int(text) else { throw StatusError(errSecParam, "kSecAttrKeySizeInBits is not a number") }
            bits = number
        case let number as NSNumber: bits = number.intValue
        default: throw StatusError(errSecParam, "kSecAttrKeySizeInBits is not a number")
        }
        switch value(kSecAttrKeyClass, in: dictionary) {
        case nil: isPrivate = true
        case let text as String where text == "0": isPrivate = false
        case let text as String where text == "1": isPrivate = true
        case let number as NSNumber where number.intValue == 0 || number.intValue == 1: isPrivate = number.intValue == 1
        case let text as String where text == "2": throw StatusError(errSecUnimplemented, "symmetric keys are not SecKeys here")
        case let number as NSNumber where number.intValue == 2: throw StatusError(errSecUnimplemented, "symmetric keys are not SecKeys here")
        default: throw StatusError(errSecParam, "kSecAttrKeyClass is not public or private")
        }
        guard forCreation else { return }
        switch value(kSecAttrTokenID, in: dictionary) {
        case nil: break
        case let token as String where token == kSecAttrTokenIDSecureEnclave as String: holdsInSecureEnclave = true
        case let token as String where token.hasPrefix("pkcs11:"): pkcs11Token = token
        default:
            throw StatusError(errSecParam, "kSecAttrTokenID names no token here (kSecAttrTokenIDSecureEnclave is the TPM, pkcs11: URIs name tokens)")
        }
        if let context = value(kSecUseAuthenticationContext, in: dictionary) {
            guard let context = context as? any ItemAuthenticationContext else {
                throw StatusError(errSecParam, "kSecUseAuthenticationContext is not an LAContext")
            }
            pin = context.itemAuthentication.password
        }
        // Top-level attributes apply to both keys; kSecPrivateKeyAttrs and kSecPublicKeyAttrs refine each.
        let common = try Self.side(dictionary, base: Side())
        privateSide = common
        publicSide = common
        if let attributes = value(kSecPrivateKeyAttrs, in: dictionary) {
            guard let attributes = attributes as? NSDictionary else { throw StatusError(errSecParam, "kSecPrivateKeyAttrs is not a dictionary") }
            privateSide = try Self.side(attributes, base: common)
        }
        if let attributes = value(kSecPublicKeyAttrs, in: dictionary) {
            guard let attributes = attributes as? NSDictionary else { throw StatusError(errSecParam, "kSecPublicKeyAttrs is not a dictionary") }
            publicSide = try Self.side(attributes, base: common)
        }
    }

    private static func side(_ dictionary: NSDictionary, base: Side) throws -> Side {
        var side = base
        if let flag = dictionary[kSecAttrIsPermanent as String] {
            guard let number = flag as? NSNumber else { throw StatusError(errSecParam, "kSecAttrIsPermanent is not a boolean") }
            side.permanent = number.boolValue
        }
        if let value = dictionary[kSecAttrApplicationTag as String] {
            if let data = dataValue(value) {
                side.tag = data
            } else if let text = value as? String {
                side.tag = Data(text.utf8)
            } else {
                throw StatusError(errSecParam, "kSecAttrApplicationTag is not data")
            }
        }
        switch dictionary[kSecAttrLabel as String] {
        case nil: break
        case let text as String: side.label = text
        default: throw StatusError(errSecParam, "kSecAttrLabel is not a string")
        }
        if let value = dictionary[kSecAttrAccessControl as String] {
            guard let control = value as? SecAccessControl else { throw StatusError(errSecParam, "kSecAttrAccessControl is not a SecAccessControl") }
            side.accessControl = control
        }
        return side
    }

    /// The size asked for (RSA 2048 and EC 256 by default), checked.
    func checkedBits() throws -> Int {
        if type == .rsa {
            let bits = self.bits ?? 2048
            guard (1024...4096).contains(bits), bits % 8 == 0 else {
                throw StatusError(errSecParam, "RSA keys are 1024 to 4096 bits in whole bytes, not \(bits)")
            }
            return bits
        }
        guard let bits = EllipticCurve(bits: bits ?? 256)?.bits else {
            throw StatusError(errSecParam, "EC keys are 256, 384 or 521 bits, not \(bits ?? 0)")
        }
        return bits
    }

    /// Refuses any key but EC P-256 (what the Secure Enclave makes, and tokens besides RSA), saying `why`.
    func requireP256(_ why: String) throws {
        guard type == .ellipticCurve, try checkedBits() == 256 else { throw StatusError(errSecParam, why) }
    }

    /// Generates the private key the parameters describe: in the TPM for the Secure Enclave, else in software.
    func generate() throws -> AsymmetricKey {
        if holdsInSecureEnclave {
            // Apple's Secure Enclave makes P-256 keys only; the TPM stands in for it.
            try requireP256("the Secure Enclave (the TPM here) holds P-256 keys only")
            return try TPMKey.generate().privateKey()
        }
        let bits = try checkedBits()
        return try type == .rsa ? AsymmetricKey.generateRSA(bits: bits) : AsymmetricKey.generateEC(curve: EllipticCurve(bits: bits)!)  // !: checked
    }
}

/// Stores a generated key in the default keychain when its side asks to be permanent.
private func storeIfPermanent(_ key: SecKey, _ side: KeyParameters.Side) throws {
    guard side.permanent else { return }
    var attributes: [String: Any] = [kSecClass as String: kSecClassKey, kSecValueRef as String: key]
    if let tag = side.tag { attributes[kSecAttrApplicationTag as String] = tag }
    if let label = side.label { attributes[kSecAttrLabel as String] = label }
    if let control = side.accessControl { attributes[kSecAttrAccessControl as String] = control }
    let status = SecItemAdd(attributes as CFDictionary, nil)
    guard status == errSecSuccess else { throw StatusError(status, "the key could not be added to the keychain") }
}

/// Generates a key pair: the private key is returned, its public key is `SecKeyCopyPublicKey` of it.
/// - Parameters:
///   - parameters: `kSecAttrKeyType` (RSA, EC), `kSecAttrKeySizeInBits` (a number or a numeric string; RSA
///     1024...4096 in whole bytes, EC 256/384/521), `kSecPrivateKeyAttrs`/`kSecPublicKeyAttrs` with
///     `kSecAttrIsPermanent`, `kSecAttrApplicationTag`, `kSecAttrLabel`.
///   - error: on failure, a retained CFError whose code is `errSecParam` (bad parameters) or the keychain's status.
/// - Returns: the private key, or nil.
@discardableResult
public func SecKeyCreateRandomKey(_ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey? {
    KeyErrors.run(error) {
        let request = try KeyParameters(parameters, forCreation: true)
        if let tokenID = request.pkcs11Token {
            // On a smart card the key is the card's object already: nothing goes to the keychain.
            if request.type != .rsa { try request.requireP256("keys are made on a token as EC P-256 or RSA keys here") }
            guard let token = try PKCS11Modules.shared().tokens().first(where: { $0.tokenID == tokenID }) else {
                throw StatusError(errSecItemNotFound, "no token \(tokenID) is present")
            }
            let label = request.privateSide.label ?? ""
            let key =
                request.type == .rsa
                ? try token.generateRSA(bits: try request.checkedBits(), label: label, pin: request.pin)
                : try token.generateP256(label: label, pin: request.pin)
            return SecKey(try key.privateKey(), applicationTag: request.privateSide.tag, label: request.privateSide.label)
        }
        // A key in the TPM is made here and stored as the TPM's blob, also in the service's keychain.
        if !request.holdsInSecureEnclave, request.privateSide.permanent, case let store = try KeychainDefaults.store(), store.remote != nil {
            // The keychain service generates and keeps the private key: it never exists in this process.
            var attributes: ItemAttributes = [:]
            if let tag = request.privateSide.tag { attributes[.applicationTag] = .data(tag) }
            if let label = request.privateSide.label { attributes[.label] = .string(label) }
            let item = try store.generateKey(
                keyType: request.type.keychainTypeCode, bits: try request.checkedBits(), attributes: attributes, returning: .reference)
            guard let stored = StoredKey(item, from: store) else { throw StatusError(errSecInternalComponent, "the service's key did not come back") }
            let privateKey = SecKey(stored.key, applicationTag: stored.applicationTag, label: stored.label)
            if request.publicSide.permanent {
                let publicKey = SecKey(try stored.key.publicKey(), applicationTag: request.publicSide.tag, label: request.publicSide.label)
                try storeIfPermanent(publicKey, request.publicSide)
            }
            return privateKey
        }
        let generated = try request.generate()
        let privateKey = SecKey(generated, applicationTag: request.privateSide.tag, label: request.privateSide.label)
        try storeIfPermanent(privateKey, request.privateSide)
        if request.publicSide.permanent {
            let publicKey = SecKey(try generated.publicKey(), applicationTag: request.publicSide.tag, label: request.publicSide.label)
            try storeIfPermanent(publicKey, request.publicSide)
        }
        return privateKey
    }
}

/// The public key of `key` (itself when it is public); nil never happens for RSA and EC keys.
@discardableResult
public func SecKeyCopyPublicKey(_ key: SecKey) -> SecKey? {
    guard let publicKey = try? key.key.publicKey() else { return nil }
    return publicKey === key.key ? key : SecKey(publicKey, applicationTag: key.applicationTag, label: key.label)
}

/// Apple's external representation: PKCS#1 DER for RSA, X9.63 `04||X||Y[||K]` for EC.
@discardableResult
public func SecKeyCopyExternalRepresentation(_ key: SecKey, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    KeyErrors.run(error) { NSData(data: try key.key.externalRepresentation()) }
}

/// A key from its external representation.
/// - Parameters:
///   - keyData: PKCS#1 DER (RSA) or X9.63 bytes (EC).
///   - attributes: `kSecAttrKeyType` and `kSecAttrKeyClass` (public or private); `kSecAttrKeySizeInBits`, when
///     given, must match the key.
///   - error: `errSecParam` for missing or wrong attributes and for data that is not such a key (as Apple's),
///     `errSecUnimplemented` for the symmetric class.
@discardableResult
public func SecKeyCreateWithData(
    _ keyData: CFData, _ attributes: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecKey? {
    KeyErrors.run(error) {
        let request = try KeyParameters(attributes, forCreation: false)
        guard attributes[kSecAttrKeyClass as String] != nil else { throw StatusError(errSecParam, "kSecAttrKeyClass is missing") }
        let key = try AsymmetricKey(externalRepresentation: keyData.copiedBytes, type: request.type, isPrivate: request.isPrivate)
        if let bits = request.bits, bits != key.sizeInBits {
            throw StatusError(errSecParam, "kSecAttrKeySizeInBits says \(bits), the key has \(key.sizeInBits)")
        }
        var tag: Data?
        if let value = attributes[kSecAttrApplicationTag as String] { tag = dataValue(value) }
        return SecKey(key, applicationTag: tag, label: attributes[kSecAttrLabel as String] as? String)
    }
}

/// The key's attributes as Apple gives them (class, type, sizes, application label, usage, data).
@discardableResult
public func SecKeyCopyAttributes(_ key: SecKey) -> CFDictionary? {
    guard let attributes = try? KeyItemAttributes(key) else { return nil }
    var dictionary = attributes.appleDictionary
    if !key.key.isHeldElsewhere { dictionary[kSecValueData as String] = NSData(data: attributes.data) }
    return NSDictionary(dictionary: dictionary)
}

/// Bytes of the modulus (RSA) or of a field element (EC).
@discardableResult
public func SecKeyGetBlockSize(_ key: SecKey) -> Int { key.key.blockSize }

/// Whether `key` can run `algorithm` for `operation`.
@discardableResult
public func SecKeyIsAlgorithmSupported(_ key: SecKey, _ operation: SecKeyOperationType, _ algorithm: SecKeyAlgorithm) -> Bool {
    switch (KeyOperation(algorithm), operation) {
    case (.signature(let scheme)?, .sign): key.key.supports(scheme, signing: true)
    case (.signature(let scheme)?, .verify): key.key.supports(scheme, signing: false)
    case (.encryption(let scheme)?, .encrypt): key.key.supports(scheme, encrypting: true)
    case (.encryption(let scheme)?, .decrypt): key.key.supports(scheme, encrypting: false)
    case (_, .keyExchange): supportsKeyExchange(key, algorithm)
    default: false
    }
}

private func signatureScheme(_ key: SecKey, _ algorithm: SecKeyAlgorithm, signing: Bool) throws -> SignatureAlgorithm {
    guard case .signature(let scheme)? = KeyOperation(algorithm), key.key.supports(scheme, signing: signing) else {
        throw StatusError(errSecParam, "\(algorithm.rawValue): algorithm not supported by the key")
    }
    return scheme
}

private func encryptionScheme(_ key: SecKey, _ algorithm: SecKeyAlgorithm, encrypting: Bool) throws -> EncryptionAlgorithm {
    guard case .encryption(let scheme)? = KeyOperation(algorithm), key.key.supports(scheme, encrypting: encrypting) else {
        throw StatusError(errSecParam, "\(algorithm.rawValue): algorithm not supported by the key")
    }
    return scheme
}

/// Signs `dataToSign` (a message or a digest, as the algorithm says) with a private key.
/// - Returns: the signature, or nil with `errSecParam` (an algorithm the key does not support, as Apple's
///   "algorithm not supported by the key"; a digest of the wrong length; input too long).
@discardableResult
public func SecKeyCreateSignature(
    _ key: SecKey, _ algorithm: SecKeyAlgorithm, _ dataToSign: CFData, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    KeyErrors.run(error) {
        let scheme = try signatureScheme(key, algorithm, signing: true)
        return NSData.copying(try key.key.signature(for: dataToSign.copiedBytes, algorithm: scheme))
    }
}

/// Checks a signature.
/// - Returns: true when it verifies; false with `errSecVerifyFailed` when it does not, or `errSecParam` as
///   for ``SecKeyCreateSignature(_:_:_:_:)``.
@discardableResult
public func SecKeyVerifySignature(
    _ key: SecKey, _ algorithm: SecKeyAlgorithm, _ signedData: CFData, _ signature: CFData,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> Bool {
    KeyErrors.run(error) {
        let scheme = try signatureScheme(key, algorithm, signing: false)
        guard try key.key.isValidSignature(signature.copiedBytes, for: signedData.copiedBytes, algorithm: scheme) else {
            throw StatusError(errSecVerifyFailed, "the signature does not verify")
        }
        return true
    } ?? false
}

/// Encrypts with the public half of `key`.
/// - Returns: the ciphertext, or nil with `errSecParam` (not an algorithm of this key, plaintext too long for
///   the modulus).
@discardableResult
public func SecKeyCreateEncryptedData(
    _ key: SecKey, _ algorithm: SecKeyAlgorithm, _ plaintext: CFData, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    KeyErrors.run(error) {
        let scheme = try encryptionScheme(key, algorithm, encrypting: true)
        return NSData.copying(try key.key.encrypt(plaintext.copiedBytes, algorithm: scheme))
    }
}

/// Decrypts with a private key.
/// - Returns: the plaintext, or nil with `errSecParam` (not an algorithm of this key, wrong length, bad
///   padding).
@discardableResult
public func SecKeyCreateDecryptedData(
    _ key: SecKey, _ algorithm: SecKeyAlgorithm, _ ciphertext: CFData, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    KeyErrors.run(error) {
        let scheme = try encryptionScheme(key, algorithm, encrypting: false)
        return NSData.copying(try key.key.decrypt(ciphertext.copiedBytes, algorithm: scheme))
    }
}
