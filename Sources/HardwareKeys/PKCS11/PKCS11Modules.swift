internal import CPKCS11
import Foundation
import SecurityBase
import Synchronization

/// PKCS#11 modules (smart-card drivers, HSM libraries), loaded and initialised: the ones p11-kit's configuration
/// registers (`/usr/share/p11-kit/modules/*.module`, `~/.config/pkcs11/modules`), or one module file a user names.
/// Owned here, finalised when released. Calls are serialised: a module's sessions are shared state.
public final class PKCS11Modules: Sendable {
    /// The loaded modules, used only under `lock`.
    private nonisolated(unsafe) let pointer: OpaquePointer
    /// The sessions kept logged in, per token, each with the PIN it logged in with (``PKCS11Token``'s
    /// `withSession`); used only under the lock, as the modules are.
    private let lock = Mutex([Login.Slot: Login]())

    /// A session kept open and logged in after an operation that gave the PIN: a token verifies a PIN slowly (a
    /// key derivation), and logging in costs more than the signature it allows. PKCS#11 logs the whole application
    /// in, so while it lasts any session of this process is logged in: another PIN ends it first.
    struct Login {
        struct Slot: Hashable {
            let module: Int
            let slot: UInt
        }
        let session: UInt
        let pin: SecretBytes
    }

    /// Modules that hold no keys of their own (p11-kit's trust module presents the system's anchors).
    static let skipped: Set<String> = ["p11-kit-trust"]

    /// The modules the Apple-compatible calls search (`SecItemCopyMatching` with a token's ID, key generation on a
    /// token): the module file `SECURITYSERVICES_PKCS11_MODULE` names, else p11-kit's configured modules, loaded at
    /// the first call; unless the application set others.
    public static func shared() throws -> PKCS11Modules {
        try current.withLock { modules in
            if let modules { return modules }
            let loaded =
                if let path = ProcessInfo.processInfo.environment["SECURITYSERVICES_PKCS11_MODULE"] {
                    try PKCS11Modules(path: path)
                } else {
                    try configured()
                }
            modules = loaded
            return loaded
        }
    }

    /// Sets the modules ``shared()`` gives.
    public static func setShared(_ modules: PKCS11Modules?) {
        current.withLock { $0 = modules }
    }

    private static let current = Mutex<PKCS11Modules?>(nil)

    /// Every module p11-kit's configuration registers.
    /// - Throws: ``HardwareKeyError`` `.unavailable` when p11-kit cannot load its configuration.
    public static func configured() throws -> PKCS11Modules {
        var pointer: OpaquePointer?
        let rv = cp11_load_configured(&pointer)
        guard rv == 0, let pointer else { throw HardwareKeyError(.unavailable, "p11-kit did not load its modules (\(PKCS11.describe(rv)))") }
        return PKCS11Modules(pointer)
    }

    /// The module at `path`.
    /// - Throws: ``HardwareKeyError`` `.unavailable` when it does not load or initialise.
    public init(path: String) throws {
        var pointer: OpaquePointer?
        let rv = cp11_load_path(path, &pointer)
        guard rv == 0, let pointer else { throw HardwareKeyError(.unavailable, "the PKCS#11 module \(path) does not load (\(PKCS11.describe(rv)))") }
        self.pointer = pointer
    }

    private init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit { cp11_release(pointer) }

    /// The tokens present in every module's slots (initialised ones).
    public func tokens() throws -> [PKCS11Token] {
        try call { modules in
            var tokens: [PKCS11Token] = []
            for module in 0..<cp11_count(modules) {
                let name = cp11_module_name(modules, module).map { pointer in
                    defer { free(pointer) }
                    return String(cString: pointer)
                } ?? "module \(module)"
                guard !Self.skipped.contains(name) else { continue }
                var slots = [UInt](repeating: 0, count: 64)
                var count = slots.count
                guard cp11_slots(modules, module, &slots, &count) == 0 else { continue }
                for slot in slots.prefix(min(count, slots.count)) {
                    var label = [CChar](repeating: 0, count: 33)
                    var model = [CChar](repeating: 0, count: 17)
                    var serial = [CChar](repeating: 0, count: 17)
                    var flags: UInt = 0
                    guard cp11_token_info(modules, module, slot, &label, &model, &serial, &flags) == 0,
                        flags & PKCS11.tokenInitialized != 0
                    else { continue }
                    tokens.append(
                        PKCS11Token(
                            modules: self, module: module, slot: slot, label: Self.text(label), model: Self.text(model),
                            serial: Self.text(serial), requiresLogin: flags & PKCS11.loginRequired != 0))
                }
            }
            return tokens
        }
    }

    /// A NUL-terminated C text.
    private static func text(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Runs `body` with the loaded modules, one caller at a time.
    func call<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        try lock.withLock { _ in try body(pointer) }
    }

    /// ``call(_:)`` with the sessions kept logged in.
    func call<T>(_ body: (OpaquePointer, inout [Login.Slot: Login]) throws -> T) throws -> T {
        try lock.withLock { logins in try body(pointer, &logins) }
    }
}

/// The PKCS#11 numbers this library uses (the standard's, as pkcs11.h defines them).
enum PKCS11 {
    static let loginRequired: UInt = 0x4
    static let tokenInitialized: UInt = 0x400
    // Object classes and attributes.
    static let certificate: UInt = 1, publicKey: UInt = 2, privateKey: UInt = 3
    static let label: UInt = 0x3, value: UInt = 0x11, id: UInt = 0x102, keyType: UInt = 0x100
    static let modulus: UInt = 0x120, publicExponent: UInt = 0x122, ecParameters: UInt = 0x180, ecPoint: UInt = 0x181
    static let rsaKey: UInt = 0, ecKey: UInt = 3
    // Mechanisms.
    static let rsaPKCS: UInt = 0x1, rsaX509: UInt = 0x3, ecdsa: UInt = 0x1041
    // Return codes the caller acts on.
    static let pinIncorrect: UInt = 0xa0, pinLocked: UInt = 0xa4, pinLengthRange: UInt = 0xa2, userNotLoggedIn: UInt = 0x101
    static let userPINNotInitialized: UInt = 0x102

    /// A digest's mechanism (CKM_SHA*) and MGF1 (CKG_MGF1_SHA*).
    static func hash(_ name: String) -> (mechanism: UInt, mgf: UInt)? {
        switch name {
        case "SHA1": (0x220, 1)
        case "SHA224": (0x255, 5)
        case "SHA256": (0x250, 2)
        case "SHA384": (0x260, 3)
        case "SHA512": (0x270, 4)
        default: nil
        }
    }

    static func describe(_ rv: UInt) -> String {
        switch rv {
        case 0x5: "CKR_GENERAL_ERROR"
        case 0x6: "CKR_FUNCTION_FAILED"
        case 0x7: "CKR_ARGUMENTS_BAD"
        case 0x30: "CKR_DEVICE_ERROR"
        case 0x32: "CKR_DEVICE_REMOVED"
        case 0x40: "CKR_ENCRYPTED_DATA_INVALID"
        case 0x41: "CKR_ENCRYPTED_DATA_LEN_RANGE"
        case 0x60: "CKR_KEY_HANDLE_INVALID"
        case 0x68: "CKR_KEY_FUNCTION_NOT_PERMITTED"
        case 0x70: "CKR_MECHANISM_INVALID"
        case 0x71: "CKR_MECHANISM_PARAM_INVALID"
        case 0xa0: "CKR_PIN_INCORRECT"
        case 0xa2: "CKR_PIN_LEN_RANGE"
        case 0xa4: "CKR_PIN_LOCKED"
        case 0xe0: "CKR_TOKEN_NOT_PRESENT"
        case 0x101: "CKR_USER_NOT_LOGGED_IN"
        case 0x150: "CKR_BUFFER_TOO_SMALL"
        case 0x190: "CKR_CRYPTOKI_NOT_INITIALIZED"
        default: "CKR 0x\(String(rv, radix: 16))"
        }
    }
}
