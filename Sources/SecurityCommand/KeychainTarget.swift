import ArgumentParser
import Foundation
import Keychain
import Security

/// The keychain a command works on and the access groups it works as: the options every command takes.
struct KeychainTarget: KeychainSelection {
    @OptionGroup var options: KeychainOptions

    @Argument(help: ArgumentHelp("The keychain database to use (as --keychain).", valueName: "keychain"))
    var keychain: String?

    var path: String? { options.path }
    var accessGroups: [String] { options.accessGroups }
}

/// ``KeychainTarget`` without the trailing keychain argument, for a command whose own arguments are a list
/// (ArgumentParser allows no positional after an array): the keychain is named by `--keychain` only.
struct KeychainOptions: KeychainSelection {
    @Option(name: [.customLong("keychain"), .customShort("k")], help: ArgumentHelp("The keychain to use (-k as macOS's import).", valueName: "path"))
    var path: String?

    @Option(
        name: .customLong("access-group"),
        help: ArgumentHelp("An access group to work as (repeatable; adds go to the first).", valueName: "group"))
    var accessGroups: [String] = []

    var keychain: String? { nil }
}

/// What both option sets name: a keychain path (by option or argument) and access groups.
protocol KeychainSelection: ParsableArguments {
    var path: String? { get }
    var accessGroups: [String] { get }
    var keychain: String? { get }
}

extension KeychainSelection {
    func validate() throws {
        if let path, let keychain, path != keychain {
            throw ValidationError("--keychain and the keychain argument name different keychains.")
        }
        if path?.isEmpty == true || keychain?.isEmpty == true {
            throw ValidationError("A keychain path cannot be empty.")
        }
        if accessGroups.contains(where: \.isEmpty) {
            throw ValidationError("An access group cannot be empty.")
        }
    }

    /// The keychain named on the command line, as an absolute path.
    var namedPath: String? {
        (path ?? keychain).map { URL(fileURLWithPath: $0).standardizedFileURL.path }
    }

    /// How security(1)'s add commands name the keychain in their messages.
    var displayName: String { namedPath ?? "<default>" }

    /// Points the Security API's default keychain at this target.
    /// - Parameter creating: whether the command may create the keychain. Commands that only read or delete
    ///   refuse a named keychain that does not exist (`errSecNoSuchKeychain`) rather than create an empty one.
    /// - Throws: ``Failure`` when a named keychain does not exist and `creating` is false.
    /// In service mode (``KeychainDefaults/serviceMode``) the keychain named is the caller's keychain of that file
    /// name in the service.
    func activate(creating: Bool) throws {
        let named = namedPath
        KeychainDefaults.configure(path: named, accessGroups: accessGroups.isEmpty ? nil : accessGroups)
        if let named, KeychainDefaults.serviceMode != nil {
            do {
                if let store = try KeychainDefaults.serviceStore(for: named, create: creating) { KeychainDefaults.use(store) }
            } catch let error as KeychainError where error.code == .itemNotFound {
                throw Failure("SecKeychainOpen \(named)", errSecNoSuchKeychain)
            }
            return
        }
        if !creating, let named, !FileManager.default.fileExists(atPath: named) {
            throw Failure("SecKeychainOpen \(named)", errSecNoSuchKeychain)
        }
    }

    /// The keychain in effect (a database path, or the service's keychain), for the `keychain:` line.
    var pathInEffect: String { KeychainDefaults.location }
}
