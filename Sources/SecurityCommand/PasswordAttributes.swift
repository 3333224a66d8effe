import ArgumentParser
import Foundation
import Security

/// A four-character code argument (`-r htps`, `-t dflt`, `-c aapl`), checked as macOS's `parse_fourcharcode`.
struct FourCharCode: Sendable {
    let text: String

    /// The code as the number macOS stores for creator and type: its four bytes, big-endian.
    var number: Int { Int(text.utf8.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }) }

    /// - Throws: `ValidationError` (a usage error) unless `argument` is exactly four bytes.
    @Sendable static func parse(_ argument: String) throws -> FourCharCode {
        guard argument.utf8.count == 4 else {
            var reason = "four-character types must be exactly 4 characters long"
            if argument.utf8.count == 3 { reason += " (try \"\(argument) \" instead of \"\(argument)\")" }
            throw ValidationError(reason)
        }
        return FourCharCode(text: argument)
    }
}

/// The flags that name a generic password's attributes, shared by add, find and delete as in security(1).
struct GenericPasswordAttributes: ParsableArguments {
    @Option(name: .customShort("a"), parsing: .unconditional, help: ArgumentHelp("Account name.", valueName: "account"))
    var account: String?

    @Option(
        name: .customShort("c"), parsing: .unconditional,
        help: ArgumentHelp("Creator (four-character code).", valueName: "creator"), transform: FourCharCode.parse)
    var creator: FourCharCode?

    @Option(
        name: .customShort("C"), parsing: .unconditional,
        help: ArgumentHelp("Type (four-character code).", valueName: "type"), transform: FourCharCode.parse)
    var type: FourCharCode?

    @Option(name: .customShort("D"), parsing: .unconditional, help: ArgumentHelp("Kind.", valueName: "kind"))
    var kind: String?

    @Option(
        name: .customShort("G"), parsing: .unconditional,
        help: ArgumentHelp("Generic attribute (\"gena\").", valueName: "value"))
    var value: String?

    @Option(name: .customShort("j"), parsing: .unconditional, help: ArgumentHelp("Comment.", valueName: "comment"))
    var comment: String?

    @Option(
        name: .customShort("l"), parsing: .unconditional,
        help: ArgumentHelp("Label (an added item's defaults to the service).", valueName: "label"))
    var label: String?

    @Option(name: .customShort("s"), parsing: .unconditional, help: ArgumentHelp("Service name.", valueName: "service"))
    var service: String?

    var isEmpty: Bool {
        account == nil && creator == nil && type == nil && kind == nil && value == nil && comment == nil
            && label == nil && service == nil
    }

    /// The search for the first matching item, as macOS's `find_first_generic_password` builds it: the primary key
    /// (account and service) alone when both are given — so that `-U` finds the item whose other attributes it is
    /// about to change — else every attribute given.
    func search(label: String?) -> [String: Any] {
        var query: [String: Any] = [:]
        if account == nil || service == nil {
            query.set(kSecAttrCreator, creator?.number)
            query.set(kSecAttrType, type?.number)
            query.set(kSecAttrDescription, kind)
            query.set(kSecAttrGeneric, value.map { Data($0.utf8) })
            query.set(kSecAttrComment, comment)
            query.set(kSecAttrLabel, label)
        }
        query.set(kSecAttrService, service)
        query.set(kSecAttrAccount, account)
        return query
    }

    /// The attributes an add writes, or an update changes: those given, with `label`.
    func attributes(label: String?) -> [String: Any] {
        var attributes: [String: Any] = [:]
        attributes.set(kSecAttrLabel, label)
        attributes.set(kSecAttrDescription, kind)
        attributes.set(kSecAttrGeneric, value.map { Data($0.utf8) })
        attributes.set(kSecAttrComment, comment)
        attributes.set(kSecAttrService, service)
        attributes.set(kSecAttrAccount, account)
        attributes.set(kSecAttrCreator, creator?.number)
        attributes.set(kSecAttrType, type?.number)
        return attributes
    }
}

/// The flags that name an internet password's attributes, shared by add, find and delete as in security(1).
struct InternetPasswordAttributes: ParsableArguments {
    @Option(name: .customShort("a"), parsing: .unconditional, help: ArgumentHelp("Account name.", valueName: "account"))
    var account: String?

    @Option(
        name: .customShort("c"), parsing: .unconditional,
        help: ArgumentHelp("Creator (four-character code).", valueName: "creator"), transform: FourCharCode.parse)
    var creator: FourCharCode?

    @Option(
        name: .customShort("C"), parsing: .unconditional,
        help: ArgumentHelp("Type (four-character code).", valueName: "type"), transform: FourCharCode.parse)
    var type: FourCharCode?

    @Option(
        name: .customShort("d"), parsing: .unconditional,
        help: ArgumentHelp("Security domain.", valueName: "securityDomain"))
    var securityDomain: String?

    @Option(name: .customShort("D"), parsing: .unconditional, help: ArgumentHelp("Kind.", valueName: "kind"))
    var kind: String?

    @Option(name: .customShort("j"), parsing: .unconditional, help: ArgumentHelp("Comment.", valueName: "comment"))
    var comment: String?

    @Option(
        name: .customShort("l"), parsing: .unconditional,
        help: ArgumentHelp("Label (an added item's defaults to the server).", valueName: "label"))
    var label: String?

    @Option(name: .customShort("p"), parsing: .unconditional, help: ArgumentHelp("Path.", valueName: "path"))
    var path: String?

    @Option(name: .customShort("P"), parsing: .unconditional, help: ArgumentHelp("Port number.", valueName: "port"))
    var port: UInt16?

    @Option(
        name: .customShort("r"), parsing: .unconditional,
        help: ArgumentHelp("Protocol (four-character code, e.g. \"htps\", \"ftp \").", valueName: "protocol"),
        transform: FourCharCode.parse)
    var `protocol`: FourCharCode?

    @Option(name: .customShort("s"), parsing: .unconditional, help: ArgumentHelp("Server name.", valueName: "server"))
    var server: String?

    @Option(
        name: .customShort("t"), parsing: .unconditional,
        help: ArgumentHelp(
            "Authentication type (four-character code; an added item's defaults to \"dflt\").",
            valueName: "authenticationType"),
        transform: FourCharCode.parse)
    var authenticationType: FourCharCode?

    /// Port 0 is no port, as in macOS.
    var givenPort: Int? { port.flatMap { $0 == 0 ? nil : Int($0) } }

    var isEmpty: Bool {
        account == nil && creator == nil && type == nil && securityDomain == nil && kind == nil && comment == nil
            && label == nil && path == nil && givenPort == nil && `protocol` == nil && server == nil
            && authenticationType == nil
    }

    /// The search for the first matching item, as macOS's `find_first_internet_password` builds it: the primary
    /// key alone when all of it is given (account, security domain, server, protocol, authentication type, port,
    /// path), else every attribute given.
    func search(label: String?, authenticationType: FourCharCode?) -> [String: Any] {
        var query: [String: Any] = [:]
        let primaryKey =
            account != nil && securityDomain != nil && server != nil && `protocol` != nil
            && authenticationType != nil && givenPort != nil && path != nil
        if !primaryKey {
            query.set(kSecAttrCreator, creator?.number)
            query.set(kSecAttrType, type?.number)
            query.set(kSecAttrDescription, kind)
            query.set(kSecAttrComment, comment)
            query.set(kSecAttrLabel, label)
        }
        query.set(kSecAttrServer, server)
        query.set(kSecAttrSecurityDomain, securityDomain)
        query.set(kSecAttrAccount, account)
        query.set(kSecAttrPath, path)
        query.set(kSecAttrPort, givenPort)
        query.set(kSecAttrProtocol, `protocol`?.text)
        query.set(kSecAttrAuthenticationType, authenticationType?.text)
        return query
    }

    /// The attributes an add writes, or an update changes: those given, with `label` and `authenticationType`.
    func attributes(label: String?, authenticationType: FourCharCode?) -> [String: Any] {
        var attributes: [String: Any] = [:]
        attributes.set(kSecAttrLabel, label)
        attributes.set(kSecAttrDescription, kind)
        attributes.set(kSecAttrComment, comment)
        attributes.set(kSecAttrServer, server)
        attributes.set(kSecAttrSecurityDomain, securityDomain)
        attributes.set(kSecAttrAccount, account)
        attributes.set(kSecAttrPath, path)
        attributes.set(kSecAttrPort, givenPort)
        attributes.set(kSecAttrProtocol, `protocol`?.text)
        attributes.set(kSecAttrAuthenticationType, authenticationType?.text)
        attributes.set(kSecAttrCreator, creator?.number)
        attributes.set(kSecAttrType, type?.number)
        return attributes
    }
}

extension [String: Any] {
    /// Sets `key` to `value` when there is one.
    mutating func set<Given>(_ key: CFString, _ value: Given?) {
        if let value { self[key as String] = value }
    }
}
