import Foundation
import Security

/// What the find, delete and add commands of both password classes do alike, as security(1) does it.
enum ItemCommands {
    /// How the password of a found item is shown.
    enum PasswordDisplay {
        /// Attributes only.
        case none
        /// `-g`: the attributes on stdout, then `password: "…"` on stderr.
        case withAttributes
        /// `-w`: the password alone on stdout.
        case only
    }

    static func display(showPassword: Bool, passwordOnly: Bool) -> PasswordDisplay {
        passwordOnly ? .only : showPassword ? .withAttributes : .none
    }

    /// find-…-password: the first match, shown as `display` says.
    /// - Throws: ``Failure`` `SecKeychainSearchCopyNext` (exit 44) when nothing matches.
    static func find(
        _ itemClass: CFString, matching query: [String: Any], display: PasswordDisplay, target: KeychainTarget
    ) throws {
        try target.activate(creating: false)
        guard let item = try Items.first(itemClass, matching: query, withData: display != .none) else {
            throw Failure("SecKeychainSearchCopyNext", errSecItemNotFound)
        }
        let password = item.data ?? Data()
        switch display {
        case .only:
            Console.output(bytes: ItemPrinter.passwordOnly(password))
        case .withAttributes:
            Console.output(ItemPrinter.attributes(of: item, keychain: target.pathInEffect))
            Console.error("password: \(ItemPrinter.buffer(Array(password)))\n")
        case .none:
            Console.output(ItemPrinter.attributes(of: item, keychain: target.pathInEffect))
        }
    }

    /// delete-…-password: the first match's attributes, then it is deleted and `password has been deleted.`
    /// goes to stderr (as macOS writes it).
    /// - Throws: ``Failure`` `SecKeychainSearchCopyNext` when nothing matches, `SecKeychainItemDelete` when the
    ///   delete fails.
    static func delete(_ itemClass: CFString, matching query: [String: Any], target: KeychainTarget) throws {
        try target.activate(creating: false)
        guard let item = try Items.first(itemClass, matching: query, withData: false) else {
            throw Failure("SecKeychainSearchCopyNext", errSecItemNotFound)
        }
        Console.output(ItemPrinter.attributes(of: item, keychain: target.pathInEffect))
        let status = Items.delete(item)
        guard status == errSecSuccess else { throw Failure("SecKeychainItemDelete", status) }
        Console.error("password has been deleted.\n")
    }

    /// add-…-password: with `-U`, the first item `search` finds gets `attributes` (and the password, when one was
    /// given); otherwise, or when there is none, a new item is added (its password empty when none was given).
    /// - Parameter addOperation: the call macOS names when the add fails.
    /// - Throws: ``Failure`` `SecKeychainItemModifyContent` when the update fails, `addOperation` when the add
    ///   does (exit 45 for `errSecDuplicateItem`).
    static func add(
        _ itemClass: CFString, attributes: [String: Any], password: Data?, update: Bool, search: [String: Any],
        addOperation: String, target: KeychainTarget
    ) throws {
        try target.activate(creating: true)
        if update, let existing = try Items.first(itemClass, matching: search, withData: false) {
            let status = Items.update(existing, attributes, data: password)
            guard status == errSecSuccess else { throw Failure("SecKeychainItemModifyContent", status) }
            return
        }
        let status = Items.add(itemClass, attributes, data: password ?? Data())
        guard status == errSecSuccess else { throw Failure(addOperation, status) }
    }
}
