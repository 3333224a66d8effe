import ArgumentParser
import Foundation
import Keychain
import Security

// security(1)'s commands for password-locked keychains: create, delete, lock, unlock, show and set the lock
// settings, change the password. Passwords come from the terminal (without echo) or standard input, one line
// each, never from the command line, where other users' `ps` would see them.

/// The keychain files a command names, as absolute paths.
private func absolute(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.path }

/// Opens the keychain at `path`, as Apple's tool does before acting on one.
private func open(_ path: String) throws -> SecKeychain {
    var keychain: SecKeychain?
    let status = SecKeychainOpen(path, &keychain)
    guard status == errSecSuccess, let keychain else { throw Failure("SecKeychainOpen \(path)", status) }
    return keychain
}

/// The keychain a command names, else the default keychain (in service mode, the caller's default keychain in the
/// service), opened, and how to name it in messages.
private func opened(_ path: String?) throws -> (keychain: SecKeychain, name: String) {
    if let path { return (try open(absolute(path)), absolute(path)) }
    var keychain: SecKeychain?
    if SecKeychainCopyDefault(&keychain) == errSecSuccess, let keychain { return (keychain, KeychainDefaults.location) }
    return (try open(KeychainDefaults.path), KeychainDefaults.path)
}

/// A password read for `prompt`: from the terminal without echo, else a line of standard input.
private func password(_ prompt: String) throws -> [UInt8] { Array(try PasswordPrompt.readOnce(prompt: prompt)) }

/// security(1)'s `-p password`, refused: the password would be on the command line.
struct CommandLinePassword: ParsableArguments {
    @Option(name: .customShort("p"), help: ArgumentHelp("Refused: give the password on standard input or at the prompt.", visibility: .hidden))
    var password: String?

    func validate() throws {
        if password != nil {
            throw ValidationError("A password on the command line is visible to other users' ps: give it at the prompt or on standard input.")
        }
    }
}

struct CreateKeychain: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create-keychain", abstract: "Create keychains locked by a password.",
        discussion: """
            The password is read at the prompt (twice on a terminal) or as one line of standard input, for each \
            keychain. The keychain is created unlocked; its secrets are sealed under a key only the password \
            unwraps (scrypt, about 100 ms here), its attributes stay readable while it is locked.
            """)

    @Flag(name: .customShort("P"), help: "Prompt for the password (the default).")
    var prompt = false

    @OptionGroup var commandLinePassword: CommandLinePassword

    @Argument(help: ArgumentHelp("The keychain files to create.", valueName: "keychain"))
    var keychains: [String]

    func validate() throws {
        if keychains.isEmpty { throw ValidationError("At least one keychain is required.") }
    }

    func run() throws {
        for path in keychains.map(absolute) {
            let secret = Array(try PasswordPrompt.read(prompt: "password for new keychain: ", retype: "retype password for new keychain: "))
            var keychain: SecKeychain?
            let status = SecKeychainCreate(path, UInt32(secret.count), secret, false, nil, &keychain)
            guard status == errSecSuccess else { throw Failure("SecKeychainCreate \(path)", status) }
        }
    }
}

struct DeleteKeychain: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete-keychain", abstract: "Delete keychains: the database, its journal and its key file.")

    @Argument(help: ArgumentHelp("The keychain files to delete.", valueName: "keychain"))
    var keychains: [String]

    func validate() throws {
        if keychains.isEmpty { throw ValidationError("At least one keychain is required.") }
    }

    func run() throws {
        for path in keychains.map(absolute) {
            let status = SecKeychainDelete(try open(path))
            guard status == errSecSuccess else { throw Failure("SecKeychainDelete \(path)", status) }
        }
    }
}

struct LockKeychain: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lock-keychain", abstract: "Lock a keychain (the default one without an argument).",
        discussion: """
            With the keychain service (SECURITYSERVICES_KEYCHAIN_SERVICE, or its socket at \
            /run/securityservices/securityd.sock), the keychain is the service's and the lock holds for every process \
            of the user. An embedded keychain's lock holds for this process only (its file never holds the unwrapped \
            key). -a locks every keychain this process opened, which here is the one named.
            """)

    @Flag(name: .customShort("a"), help: "Lock all keychains.")
    var all = false

    @Argument(help: ArgumentHelp("The keychain to lock.", valueName: "keychain"))
    var keychain: String?

    func run() throws {
        if all {
            let status = SecKeychainLockAll()
            guard status == errSecSuccess else { throw Failure("SecKeychainLockAll", status) }
            return
        }
        let (opened, path) = try opened(keychain)
        let status = SecKeychainLock(opened)
        guard status == errSecSuccess else { throw Failure("SecKeychainLock \(path)", status) }
    }
}

struct UnlockKeychain: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unlock-keychain", abstract: "Check a keychain's password by unlocking it.",
        discussion: """
            The password is read at the prompt or as one line of standard input. A wrong password is \
            errSecAuthFailed (exit 51), each one in a row answered later. With the keychain service the keychain \
            stays unlocked for every process of the user until lock-keychain or its lock timeout; an embedded \
            keychain's unlock holds for this process only.
            """)

    @Flag(name: .customShort("u"), help: "Use the password (the default; a prompt otherwise).")
    var usePassword = false

    @OptionGroup var commandLinePassword: CommandLinePassword

    @Argument(help: ArgumentHelp("The keychain to unlock.", valueName: "keychain"))
    var keychain: String?

    func run() throws {
        let (opened, path) = try opened(keychain)
        let secret = try password("password to unlock \(path)")
        let status = SecKeychainUnlock(opened, UInt32(secret.count), secret, true)
        guard status == errSecSuccess else { throw Failure("SecKeychainUnlock \(path)", status) }
    }
}

struct ShowKeychainInfo: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show-keychain-info", abstract: "Show a keychain's lock settings.")

    @Argument(help: ArgumentHelp("The keychain.", valueName: "keychain"))
    var keychain: String?

    func run() throws {
        let (opened, path) = try opened(keychain)
        var settings = SecKeychainSettings()
        let status = SecKeychainCopySettings(opened, &settings)
        guard status == errSecSuccess else { throw Failure("SecKeychainCopySettings \(path)", status) }
        let sleep = settings.lockOnSleep ? " lock-on-sleep" : ""
        let timeout = settings.useLockInterval ? " timeout=\(settings.lockInterval)s" : " no-timeout"
        print("Keychain \"\(path)\"\(sleep)\(timeout)")
    }
}

struct SetKeychainSettings: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-keychain-settings", abstract: "Set a keychain's lock settings.",
        discussion: """
            Without options the keychain neither locks on sleep nor after a timeout. The keychain must be unlocked: \
            when it is not (an embedded keychain in a new process, or a locked service keychain), the password is \
            read (at the prompt or on standard input) to unlock it first.
            """)

    @Flag(name: .customShort("l"), help: "Lock when the system sleeps.")
    var lockOnSleep = false

    @Flag(name: .customShort("u"), help: "Lock after the timeout.")
    var lockAfterTimeout = false

    @Option(name: .customShort("t"), help: ArgumentHelp("The timeout in seconds (default 300; implies -u).", valueName: "timeout"))
    var timeout: UInt32?

    @Argument(help: ArgumentHelp("The keychain.", valueName: "keychain"))
    var keychain: String?

    func validate() throws {
        if timeout == 0 { throw ValidationError("The timeout must be at least one second.") }
    }

    func run() throws {
        let (opened, path) = try opened(keychain)
        try unlockForChange(opened, path)
        let useInterval = lockAfterTimeout || timeout != nil
        var settings = SecKeychainSettings(
            version: SEC_KEYCHAIN_SETTINGS_VERS1, lockOnSleep: lockOnSleep, useLockInterval: useInterval,
            lockInterval: useInterval ? timeout ?? 300 : 0)
        let status = SecKeychainSetSettings(opened, &settings)
        guard status == errSecSuccess else { throw Failure("SecKeychainSetSettings \(path)", status) }
    }
}

struct SetKeychainPassword: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-keychain-password", abstract: "Change a keychain's password.",
        discussion: """
            The old password, then the new one (twice on a terminal), at the prompt or as lines of standard input. \
            One key is wrapped again; no item is rewritten. A wrong old password is errSecAuthFailed (exit 51) and \
            changes nothing.
            """)

    @OptionGroup var commandLinePassword: CommandLinePassword

    @Option(name: .customShort("o"), help: ArgumentHelp("Refused: give the old password on standard input or at the prompt.", visibility: .hidden))
    var oldPassword: String?

    @Argument(help: ArgumentHelp("The keychain.", valueName: "keychain"))
    var keychain: String?

    func validate() throws {
        if oldPassword != nil {
            throw ValidationError("A password on the command line is visible to other users' ps: give it at the prompt or on standard input.")
        }
    }

    func run() throws {
        let (opened, path) = try opened(keychain)
        let old = try password("old password")
        let new = Array(try PasswordPrompt.read(prompt: "new password: ", retype: "retype new password: "))
        let status = SecKeychainChangePassword(opened, UInt32(old.count), old, UInt32(new.count), new)
        guard status == errSecSuccess else { throw Failure("SecKeychainChangePassword \(path)", status) }
    }
}

/// Unlocks `keychain` with a password read for it, when this process has it locked (a change needs it unlocked).
private func unlockForChange(_ keychain: SecKeychain, _ path: String) throws {
    var status: SecKeychainStatus = 0
    let read = SecKeychainGetStatus(keychain, &status)
    guard read == errSecSuccess else { throw Failure("SecKeychainGetStatus \(path)", read) }
    guard status & kSecUnlockStateStatus == 0 else { return }
    let secret = try password("password to unlock \(path)")
    let unlocked = SecKeychainUnlock(keychain, UInt32(secret.count), secret, true)
    guard unlocked == errSecSuccess else { throw Failure("SecKeychainUnlock \(path)", unlocked) }
}

/// `-d user|system|common|dynamic`, as security(1) names the preference domains.
enum DomainOption: String, ExpressibleByArgument, CaseIterable {
    case user, system, common, dynamic

    var domain: SecPreferencesDomain {
        switch self {
        case .user: .user
        case .system: .system
        case .common: .common
        case .dynamic: .dynamic
        }
    }
}

/// security(1)'s way of listing keychains: each path quoted, indented four spaces, on a line of its own.
private func printKeychains(_ keychains: [SecKeychain]) throws {
    for keychain in keychains {
        var length = UInt32(4096)
        var buffer = [CChar](repeating: 0, count: 4096)
        let status = SecKeychainGetPath(keychain, &length, &buffer)
        guard status == errSecSuccess else { throw Failure("SecKeychainGetPath", status) }
        print("    \"\(String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self))\"")
    }
}

struct ListKeychains: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list-keychains", abstract: "Display or set the keychain search list.",
        discussion: """
            Without -d: the search list in effect (the user's list, or the user's default keychain, then the system's \
            list). With -d: that domain's list as set. -s sets the domain's list (the user's without -d) to the \
            keychains named; -s alone empties it.
            """)

    @Option(name: .customShort("d"), help: "The preference domain.")
    var domain: DomainOption?

    @Flag(name: .customShort("s"), help: "Set the search list to the keychains named.")
    var set = false

    @Argument(help: ArgumentHelp("The keychains of the new list (with -s).", valueName: "keychain"))
    var keychains: [String] = []

    func validate() throws {
        if !set, !keychains.isEmpty { throw ValidationError("Keychains are named only with -s.") }
    }

    func run() throws {
        if set {
            let list = NSArray(array: try keychains.map { try open(absolute($0)) })
            let status = SecKeychainSetDomainSearchList((domain ?? .user).domain, list)
            guard status == errSecSuccess else { throw Failure("SecKeychainSetDomainSearchList", status) }
            return
        }
        var list: CFArray?
        let status = domain.map { SecKeychainCopyDomainSearchList($0.domain, &list) } ?? SecKeychainCopySearchList(&list)
        guard status == errSecSuccess else { throw Failure(domain == nil ? "SecKeychainCopySearchList" : "SecKeychainCopyDomainSearchList", status) }
        try printKeychains((list as? [SecKeychain]) ?? [])
    }
}

/// `default-keychain` and `login-keychain`: display or set one keychain of a domain.
private protocol DomainKeychainCommand: ParsableCommand {
    var domain: DomainOption? { get }
    var set: Bool { get }
    var keychain: String? { get }
    static var copyName: String { get }
    static var setName: String { get }
    static func copy(_ domain: SecPreferencesDomain, _ keychain: UnsafeMutablePointer<SecKeychain?>) -> OSStatus
    static func set(_ domain: SecPreferencesDomain, _ keychain: SecKeychain?) -> OSStatus
}

extension DomainKeychainCommand {
    func validate() throws {
        if !set, keychain != nil { throw ValidationError("A keychain is named only with -s.") }
    }

    func run() throws {
        let domain = (self.domain ?? .user).domain
        if set {
            let status = Self.set(domain, try keychain.map { try open(absolute($0)) })
            guard status == errSecSuccess else { throw Failure(Self.setName, status) }
            return
        }
        var found: SecKeychain?
        let status = Self.copy(domain, &found)
        guard status == errSecSuccess, let found else { throw Failure(Self.copyName, status) }
        try printKeychains([found])
    }
}

struct DefaultKeychain: DomainKeychainCommand {
    static let configuration = CommandConfiguration(
        commandName: "default-keychain", abstract: "Display or set the default keychain (where new items go).")

    @Option(name: .customShort("d"), help: "The preference domain.")
    var domain: DomainOption?

    @Flag(name: .customShort("s"), help: "Set the default keychain to the one named (none: unset).")
    var set = false

    @Argument(help: ArgumentHelp("The new default keychain (with -s).", valueName: "keychain"))
    var keychain: String?

    static let copyName = "SecKeychainCopyDomainDefault"
    static let setName = "SecKeychainSetDomainDefault"
    static func copy(_ domain: SecPreferencesDomain, _ keychain: UnsafeMutablePointer<SecKeychain?>) -> OSStatus {
        SecKeychainCopyDomainDefault(domain, keychain)
    }
    static func set(_ domain: SecPreferencesDomain, _ keychain: SecKeychain?) -> OSStatus { SecKeychainSetDomainDefault(domain, keychain) }
}

struct LoginKeychain: DomainKeychainCommand {
    static let configuration = CommandConfiguration(
        commandName: "login-keychain", abstract: "Display or set the login keychain (the user's; the default keychain unless set).")

    @Option(name: .customShort("d"), help: "The preference domain (the user's only).")
    var domain: DomainOption?

    @Flag(name: .customShort("s"), help: "Set the login keychain to the one named (none: unset).")
    var set = false

    @Argument(help: ArgumentHelp("The new login keychain (with -s).", valueName: "keychain"))
    var keychain: String?

    static let copyName = "SecKeychainCopyLogin"
    static let setName = "SecKeychainSetLogin"
    static func copy(_ domain: SecPreferencesDomain, _ keychain: UnsafeMutablePointer<SecKeychain?>) -> OSStatus {
        domain == .user ? SecKeychainCopyLogin(keychain) : errSecNoDefaultKeychain
    }
    static func set(_ domain: SecPreferencesDomain, _ keychain: SecKeychain?) -> OSStatus {
        domain == .user ? SecKeychainSetLogin(keychain) : errSecUnimplemented
    }
}
