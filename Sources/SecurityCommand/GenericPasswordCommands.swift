import ArgumentParser
import Foundation
import Security

struct AddGenericPassword: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-generic-password", abstract: "Add a generic password item.",
        discussion: """
            Without -U an item with the same account and service must not exist (errSecDuplicateItem, exit 45). \
            Without -w the password is empty; -w as the last option prompts for it (or reads a line of standard \
            input when that is not a terminal). A password on the command line is visible to other users' ps.
            """)

    @OptionGroup var item: GenericPasswordAttributes

    @Option(
        name: .customShort("w"), parsing: .unconditional,
        help: ArgumentHelp("The password (as the last option, without a value: prompt for it).", valueName: "password"))
    var password: String?

    @Flag(name: .customLong(PasswordPrompt.flagName), help: .hidden)
    var promptForPassword = false

    @Flag(name: .customShort("U"), help: "Update the item if it already exists.")
    var update = false

    @OptionGroup var access: AccessOptions

    @OptionGroup var target: KeychainTarget

    func validate() throws {
        guard item.account != nil, item.service != nil else {
            throw ValidationError("An account (-a) and a service (-s) are required.")
        }
        if password != nil, promptForPassword { throw ValidationError("-w is given twice.") }
    }

    func run() throws {
        let secret = try promptForPassword ? PasswordPrompt.read() : password.map { Data($0.utf8) }
        let label = item.label ?? item.service
        var attributes = item.attributes(label: label)
        attributes[kSecAttrAccess as String] = try access.access(description: label ?? "")
        try ItemCommands.add(
            kSecClassGenericPassword, attributes: attributes, password: secret, update: update,
            search: item.search(label: label), addOperation: "SecKeychainItemCreateFromContent (\(target.displayName))",
            target: target)
    }
}

struct FindGenericPassword: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find-generic-password", abstract: "Find a generic password item.",
        discussion: "Prints the first matching item's attributes; not found is errSecItemNotFound (exit 44).")

    @OptionGroup var item: GenericPasswordAttributes

    @Flag(name: .customShort("g"), help: "Display the password for the item found (on stderr).")
    var showPassword = false

    @Flag(name: .customShort("w"), help: "Display only the password on stdout.")
    var passwordOnly = false

    @OptionGroup var target: KeychainTarget

    func run() throws {
        try ItemCommands.find(
            kSecClassGenericPassword, matching: item.search(label: item.label),
            display: ItemCommands.display(showPassword: showPassword, passwordOnly: passwordOnly), target: target)
    }
}

struct DeleteGenericPassword: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete-generic-password", abstract: "Delete a generic password item.",
        discussion: "Deletes the first matching item, printing its attributes.")

    @OptionGroup var item: GenericPasswordAttributes

    @OptionGroup var target: KeychainTarget

    func validate() throws {
        guard !item.isEmpty else { throw ValidationError("At least one attribute to match is required.") }
    }

    func run() throws {
        try ItemCommands.delete(kSecClassGenericPassword, matching: item.search(label: item.label), target: target)
    }
}
