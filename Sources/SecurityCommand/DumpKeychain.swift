import ArgumentParser
import Foundation
import Security

struct DumpKeychain: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump-keychain", abstract: "Dump the contents of the keychain.",
        discussion: """
            Every item the access groups can see — generic and internet passwords, certificates, keys — with its \
            attributes; with -d also its data (the password), decrypted.
            """)

    @Flag(name: .customShort("d"), help: "Dump (decrypted) data of items.")
    var showData = false

    @OptionGroup var target: KeychainTarget

    func run() throws {
        try target.activate(creating: false)
        for itemClass in [kSecClassGenericPassword, kSecClassInternetPassword, kSecClassCertificate, kSecClassKey] {
            for item in try Items.all(itemClass, withData: showData) {
                var text = ItemPrinter.attributes(of: item, keychain: target.pathInEffect)
                if showData { text += "data:\n\(ItemPrinter.buffer(Array(item.data ?? Data())))\n" }
                Console.output(text)
            }
        }
    }
}
