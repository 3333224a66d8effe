public import Foundation
import Keychain

// Apple's SecAccessControl.h: an accessibility with constraints, for kSecAttrAccessControl. There is no user
// interface, passcode or biometry on this platform: a constraint that asks for the user is kept only on an item of
// a keychain with a password, which is the proof of the user when the item's secret is read (an LAContext's
// credential, or an unlock within its reuse duration); a constraint only biometry satisfies is refused at creation
// (see ItemAccessControl, ItemAuthentication and docs/keychain.md).

/// An item's accessibility and constraints (Apple's `SecAccessControlRef`).
public final class SecAccessControl: Sendable, CustomStringConvertible {
    let value: ItemAccessControl

    init(_ value: ItemAccessControl) { self.value = value }

    public var description: String { "<SecAccessControl \(value.protection.rawValue) flags=0x\(String(value.flags, radix: 16))>" }
}
public typealias SecAccessControlRef = SecAccessControl

/// Apple's `SecAccessControlCreateFlags`.
public struct SecAccessControlCreateFlags: OptionSet, Sendable, Hashable {
    public let rawValue: CFOptionFlags
    public init(rawValue: CFOptionFlags) { self.rawValue = rawValue }

    public static let userPresence = Self(rawValue: ItemAccessControl.Flag.userPresence)
    public static let biometryAny = Self(rawValue: ItemAccessControl.Flag.biometryAny)
    @available(*, deprecated, renamed: "biometryAny")
    public static let touchIDAny = Self(rawValue: ItemAccessControl.Flag.biometryAny)
    public static let biometryCurrentSet = Self(rawValue: ItemAccessControl.Flag.biometryCurrentSet)
    @available(*, deprecated, renamed: "biometryCurrentSet")
    public static let touchIDCurrentSet = Self(rawValue: ItemAccessControl.Flag.biometryCurrentSet)
    public static let devicePasscode = Self(rawValue: ItemAccessControl.Flag.devicePasscode)
    public static let companion = Self(rawValue: ItemAccessControl.Flag.companion)
    @available(*, deprecated, renamed: "companion")
    public static let watch = Self(rawValue: ItemAccessControl.Flag.companion)
    public static let or = Self(rawValue: ItemAccessControl.Flag.or)
    public static let and = Self(rawValue: ItemAccessControl.Flag.and)
    public static let privateKeyUsage = Self(rawValue: ItemAccessControl.Flag.privateKeyUsage)
    public static let applicationPassword = Self(rawValue: ItemAccessControl.Flag.applicationPassword)
}

/// An access control of `protection` (one of the `kSecAttrAccessible…` values) with `flags`.
/// - Returns: the access control; nil with `errSecParam` in `error` for another protection or flags Apple does not
///   define, with `errSecUnimplemented` for constraints only biometry or a companion device satisfies (this platform
///   has neither; `[.biometryAny, .or, .devicePasscode]` is accepted, and satisfied by the password).
@discardableResult
public func SecAccessControlCreateWithFlags(
    _ allocator: CFAllocator?, _ protection: CFTypeRef, _ flags: SecAccessControlCreateFlags,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecAccessControl? {
    KeyErrors.run(error) {
        guard let code = protection as? String, let accessibility = Accessibility(rawValue: code) else {
            throw StatusError(errSecParam, "the protection is not a kSecAttrAccessible value")
        }
        let control: ItemAccessControl
        do {
            control = try ItemAccessControl(encoded: ItemAccessControl(protection: accessibility, flags: flags.rawValue).encoded())
        } catch {
            throw StatusError(errSecParam, "flags Apple does not define")
        }
        guard control.isSatisfiable else {
            throw StatusError(errSecUnimplemented, "biometry and companion devices do not exist on this platform: allow the passcode with .or")
        }
        return SecAccessControl(control)
    }
}
