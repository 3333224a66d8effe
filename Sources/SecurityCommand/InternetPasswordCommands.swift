import ArgumentParser
import Foundation
import Security

struct AddInternetPassword: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-internet-password", abstract: "Add an internet password item.",
        discussion: """
            Without -U an item with the same account, security domain, server, protocol, authentication type, \
            port and path must not exist (errSecDuplicateItem, exit 45). Without -w the password is empty; -w as \
            the last option prompts for it (or reads a line of standard input when that is not a terminal).
            """)

    @OptionGroup var item: InternetPasswordAttributes

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
        guard item.account != nil, item.server != nil else {
            throw ValidationError("An account (-a) and a server (-s) are required.")
        }
        if password != nil, promptForPassword { throw ValidationError("-w is given twice.") }
    }

    func run() throws {
        let secret = try promptForPassword ? PasswordPrompt.read() : password.map { Data($0.utf8) }
        let label = item.label ?? item.server
        // macOS's default authentication type, written and searched for.
        let authenticationType = item.authenticationType ?? FourCharCode(text: "dflt")
        var attributes = item.attributes(label: label, authenticationType: authenticationType)
        attributes[kSecAttrAccess as String] = try access.access(description: label ?? "")
        try ItemCommands.add(
            kSecClassInternetPassword, attributes: attributes,
            password: secret, update: update, search: item.search(label: label, authenticationType: authenticationType),
            addOperation: "SecKeychainAddInternetPassword \(target.namedPath ?? "<NULL>")", target: target)
    }
}

struct FindInternetPassword: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find-internet-password", abstract: "Find an internet password item.",
        discussion: "Prints the first matching item's attributes; not found is errSecItemNotFound (exit 44).")

    @OptionGroup var item: InternetPasswordAttributes

    @Flag(name: .customShort("g"), help: "Display the password for the item found (on stderr).")
    var showPassword = false

    @Flag(name: .customShort("w"), help: "Display only the password on stdout.")
    var passwordOnly = false

    @OptionGroup var target: KeychainTarget

    func run() throws {
        try ItemCommands.find(
            kSecClassInternetPassword,
            matching: item.search(label: item.label, authenticationType: item.authenticationType),
            display: ItemCommands.display(showPassword: showPassword, passwordOnly: passwordOnly), target: target)
    }
}

struct DeleteInternetPassword: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete-internet-password", abstract: "Delete an internet password item.",
        discussion: "Deletes the first matching item, printing its attributes.")

    @OptionGroup var item: InternetPasswordAttributes

    @OptionGroup var target: KeychainTarget

    func validate() throws {
        guard !item.isEmpty else { throw ValidationError("At least one attribute to match is required.") }
    }

    func run() throws {
        try ItemCommands.delete(
            kSecClassInternetPassword,
            matching: item.search(label: item.label, authenticationType: item.authenticationType), target: target)
    }
}
