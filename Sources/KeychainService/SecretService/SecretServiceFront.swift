internal import CSDBus
import Foundation
import Keychain
import SecurityBase

/// Who sees which items through the Secret Service.
public enum SecretServiceSharing: String, Sendable, CaseIterable {
    /// Each application sees the items it stored, and others only as the policy grants (the default): the same
    /// access groups as on the keychain service's socket, for the caller the bus names.
    case perApplication = "application"
    /// Every process of the user sees every item, as with gnome-keyring-daemon: one group, ``sharedGroup``.
    case everyone

    /// The access group of every Secret Service item when the items are shared.
    public static let sharedGroup = "org.freedesktop.secrets"
}

/// The freedesktop Secret Service API (version 0.2) over the keychain service's stores: the objects, their methods
/// and properties, and who may see what. Collections are the caller's keychains in the service (`login`, alias
/// `default`, is its default keychain); items are generic passwords (``SecretItemRecord``).
final class SecretServiceFront: @unchecked Sendable {
    // @unchecked: its state is touched on the bus's thread only (``SecretServiceBus``); a prompt's thread hands its
    // outcome back through the bus's `post`, which runs it there.
    let keychains: KeychainService
    let sharing: SecretServiceSharing
    /// The program that asks the user for a keychain's password; nil: no prompts (headless).
    let prompter: String?
    /// Set when the bus starts serving: where signals go.
    var bus: SecretServiceBus?
    var prompts: [String: PendingPrompt] = [:]
    var promptCount = 0
    private var sessions: [String: SecretSession] = [:]
    private var sessionCount = 0
    private var callers: [String: Caller] = [:]

    private struct Caller {
        let process: PeerProcess
        let groups: [String]
    }

    init(keychains: KeychainService, sharing: SecretServiceSharing, prompter: String?) {
        self.keychains = keychains
        self.sharing = sharing
        self.prompter = prompter
    }

    /// Sessions, and prompts, one client may hold at once: each costs the service memory, a DH session a key
    /// agreement.
    static let sessionsPerClient = 64
    static let promptsPerClient = 16

    /// Forgets what `client`, which left the bus, held: its identity, sessions and prompts (a prompter still asking
    /// for it is stopped).
    func forget(_ client: String) {
        callers[client] = nil
        sessions = sessions.filter { $0.value.owner != client }
        for (path, prompt) in prompts where prompt.owner == client {
            prompt.asking.dismiss()
            prompts[path] = nil
        }
    }

    static let serviceInterface = "org.freedesktop.Secret.Service"
    static let collectionInterface = "org.freedesktop.Secret.Collection"
    static let itemInterface = "org.freedesktop.Secret.Item"
    static let sessionInterface = "org.freedesktop.Secret.Session"
    static let promptInterface = "org.freedesktop.Secret.Prompt"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"

    // MARK: Calls

    /// Answers one call (always: with its answer or an error); 1 for sd-bus, the call is handled.
    func handle(_ message: OpaquePointer) -> Int32 {
        var type: UInt8 = 0
        guard sd_bus_message_get_type(message, &type) >= 0, Int(type) == Int(SD_BUS_MESSAGE_METHOD_CALL) else { return 0 }
        let text = { (pointer: UnsafePointer<CChar>?) in pointer.map { String(cString: $0) } ?? "" }
        let call = Call(
            path: text(sd_bus_message_get_path(message)), interface: text(sd_bus_message_get_interface(message)),
            member: text(sd_bus_message_get_member(message)), sender: text(sd_bus_message_get_sender(message)),
            arguments: BusReader(message: message))
        do {
            let caller = try identify(call.sender, message)
            let answer = try respond(to: call, from: caller)
            var reply: OpaquePointer?
            guard sd_bus_message_new_method_return(message, &reply) >= 0, let reply else { throw BusError(.failed, "no answer can be made") }
            defer { sd_bus_message_unref(reply) }
            try answer(BusWriter(message: reply))
            _ = sd_bus_send(nil, reply, nil)
        } catch let error as BusError {
            _ = csdbus_reply_error(message, error.code.name, error.reason)
        } catch {
            _ = csdbus_reply_error(message, "org.freedesktop.DBus.Error.Failed", "\(error)")
        }
        return 1
    }

    struct Call {
        let path: String
        let interface: String
        let member: String
        let sender: String
        let arguments: BusReader
    }

    /// The answer's arguments, written once the call succeeded.
    typealias Answer = (BusWriter) throws -> Void

    private func respond(to call: Call, from caller: Caller) throws -> Answer {
        if call.interface == "org.freedesktop.DBus.Introspectable", call.member == "Introspect" {
            let xml = Self.introspection(call.path)
            return { try $0.string(xml) }
        }
        if call.interface == Self.propertiesInterface { return try properties(call, caller) }
        let arguments = call.arguments
        switch (call.path, call.member) {
        case (SecretPaths.service, "OpenSession"):
            guard sessions.values.count(where: { $0.owner == call.sender }) < Self.sessionsPerClient else {
                throw BusError(.failed, "the caller has \(Self.sessionsPerClient) sessions open: close one first")
            }
            let algorithm = try arguments.string()
            let input = try arguments.variant()
            let (session, output) = try SecretSession.open(algorithm, input: input, owner: call.sender)
            sessionCount += 1
            let path = SecretPaths.sessions + "s\(sessionCount)"
            sessions[path] = session
            return { try $0.variant(output); try $0.objectPath(path) }
        case (SecretPaths.service, "SearchItems"):
            let query = try arguments.stringDictionary()
            var unlocked: [String] = []
            var locked: [String] = []
            for collection in collectionPaths(caller) {
                let (items, isLocked) = try self.items(in: collection, caller, matching: query)
                if isLocked { locked += items.map(\.path) } else { unlocked += items.map(\.path) }
            }
            return { try $0.objectPaths(unlocked); try $0.objectPaths(locked) }
        case (SecretPaths.service, "Unlock"):
            var unlocked: [String] = []
            var locked: [(object: String, collection: String)] = []
            for object in try arguments.objectPaths() {
                let collection = try collectionOf(object)
                if try withStore(collection, caller, { $0.isLocked }) { locked.append((object, collection)) } else { unlocked.append(object) }
            }
            guard let first = locked.first else { return { try $0.objectPaths(unlocked); try $0.objectPath(SecretPaths.none) } }
            guard prompter != nil else {
                throw BusError(.isLocked, 
                    "\(first.collection) is locked and this service has no prompter: unlock the keychain with `security unlock-keychain` "
                        + "through the keychain service (or start securityd with --prompter), then ask again")
            }
            let prompt = try makePrompt(locked, for: caller.process.identity, groups: caller.groups, owner: call.sender)
            return { try $0.objectPaths(unlocked); try $0.objectPath(prompt) }
        case (SecretPaths.service, "Lock"):
            var locked: [String] = []
            for object in try arguments.objectPaths() {
                let collection = try collectionOf(object)
                if try withStore(collection, caller, { store -> Bool in
                    guard store.isPasswordLocked else { return false }
                    try store.lock()
                    return true
                }) {
                    locked.append(object)
                }
            }
            return { try $0.objectPaths(locked); try $0.objectPath(SecretPaths.none) }
        case (SecretPaths.service, "GetSecrets"):
            let paths = try arguments.objectPaths()
            let (session, sessionPath) = try self.session(try arguments.objectPath(), call.sender)
            var secrets: [(String, WireSecret)] = []
            for path in paths {
                guard let wire = try? secret(of: path, caller, session: session, sessionPath: sessionPath) else { continue }
                secrets.append((path, wire))
            }
            return { writer in
                try writer.container("a", "{o(oayays)}") {
                    for (path, secret) in secrets {
                        try writer.container("e", "o(oayays)") {
                            try writer.objectPath(path)
                            try writer.secret(secret)
                        }
                    }
                }
            }
        case (SecretPaths.service, "CreateCollection"):
            let properties = try arguments.properties()
            let alias = try arguments.string()
            let path = try createCollection(properties, alias: alias, caller)
            return { try $0.objectPath(path); try $0.objectPath(SecretPaths.none) }
        case (SecretPaths.service, "ReadAlias"):
            let alias = try arguments.string()
            return { try $0.objectPath(alias == "default" ? SecretPaths.login : SecretPaths.none) }
        case (SecretPaths.service, "SetAlias"):
            let alias = try arguments.string()
            let target = try arguments.objectPath()
            guard alias == "default", target == SecretPaths.login || target == SecretPaths.defaultAlias else {
                throw BusError(.notSupported, "the only alias is default, and it names the default keychain (\(SecretPaths.login))")
            }
            return { _ in }
        default:
            break
        }
        if call.path.hasPrefix(SecretPaths.prompts) { return try promptCall(call) }
        if call.path.hasPrefix(SecretPaths.sessions), call.member == "Close" {
            guard sessions[call.path]?.owner == call.sender else { throw BusError(.noSession, "\(call.path) is not a session of the caller") }
            sessions[call.path] = nil
            return { _ in }
        }
        if let collection = SecretPaths.collection(named: call.path) {
            return try collectionCall(call, collection, caller)
        }
        if SecretPaths.item(call.path) != nil {
            return try itemCall(call, caller)
        }
        throw BusError(.unknownMethod, "\(call.interface).\(call.member) on \(call.path) is not a method of the Secret Service")
    }

    private func collectionCall(_ call: Call, _ collection: String, _ caller: Caller) throws -> Answer {
        try requireCollection(collection, caller)
        switch call.member {
        case "SearchItems":
            let query = try call.arguments.stringDictionary()
            let paths = try items(in: collection, caller, matching: query).items.map(\.path)
            return { try $0.objectPaths(paths) }
        case "CreateItem":
            let properties = try call.arguments.properties()
            let secret = try call.arguments.secret()
            let replace = try call.arguments.bool()
            let path = try createItem(in: collection, properties, secret, replace: replace, call.sender, caller)
            return { try $0.objectPath(path); try $0.objectPath(SecretPaths.none) }
        case "Delete":
            // The caller's items go; the keychain stays, as other applications' items may be in it.
            let paths = try items(in: collection, caller, matching: [:]).items.map(\.path)
            if !paths.isEmpty { _ = try withStore(collection, caller) { try $0.delete(ItemQuery(.genericPassword, limit: .all)) } }
            for path in paths { bus?.signal(collection, Self.collectionInterface, "ItemDeleted", to: call.sender) { try $0.objectPath(path) } }
            return { try $0.objectPath(SecretPaths.none) }
        default:
            throw BusError(.unknownMethod, "\(call.member) is not a method of a collection")
        }
    }

    private func itemCall(_ call: Call, _ caller: Caller) throws -> Answer {
        let (collection, reference) = try item(call.path, caller)
        switch call.member {
        case "GetSecret":
            let (session, sessionPath) = try self.session(try call.arguments.objectPath(), call.sender)
            let secret = try self.secret(of: call.path, caller, session: session, sessionPath: sessionPath)
            return { try $0.secret(secret) }
        case "SetSecret":
            let wire = try call.arguments.secret()
            let (session, _) = try self.session(wire.session, call.sender)
            let plain = try session.decode(wire)
            try withStore(collection, caller) { store in
                var record = SecretItemRecord(try self.attributes(reference, store))
                record.contentType = wire.contentType
                _ = try store.update(
                    ItemQuery(nil, persistentReference: reference), attributes: [.generic: .data(try record.encoded())],
                    data: plain.withUnsafeBytes { Data($0) })
            }
            bus?.signal(collection, Self.collectionInterface, "ItemChanged", to: call.sender) { try $0.objectPath(call.path) }
            return { _ in }
        case "Delete":
            _ = try withStore(collection, caller) { store in
                _ = try self.attributes(reference, store)  // the caller's generic password, not another kind of item
                return try store.delete(ItemQuery(nil, persistentReference: reference))
            }
            bus?.signal(collection, Self.collectionInterface, "ItemDeleted", to: call.sender) { try $0.objectPath(call.path) }
            return { try $0.objectPath(SecretPaths.none) }
        default:
            throw BusError(.unknownMethod, "\(call.member) is not a method of an item")
        }
    }

    // MARK: Properties

    private func properties(_ call: Call, _ caller: Caller) throws -> Answer {
        let interface = try call.arguments.string()
        switch call.member {
        case "Get":
            let name = try call.arguments.string()
            guard let value = try propertyValues(call.path, interface, caller).first(where: { $0.0 == name })?.1 else {
                throw BusError(.unknownProperty, "\(interface) has no property \(name) on \(call.path)")
            }
            return { try $0.variant(value) }
        case "GetAll":
            let values = try propertyValues(call.path, interface, caller)
            return { try $0.properties(values) }
        case "Set":
            let name = try call.arguments.string()
            let value = try call.arguments.variant()
            try setProperty(call.path, interface, name, value, caller, call.sender)
            return { _ in }
        default:
            throw BusError(.unknownMethod, "\(call.member) is not a method of \(Self.propertiesInterface)")
        }
    }

    private func propertyValues(_ path: String, _ interface: String, _ caller: Caller) throws -> [(String, BusValue)] {
        if path == SecretPaths.service {
            guard interface == Self.serviceInterface || interface.isEmpty else { return [] }
            return [("Collections", .objectPaths(collectionPaths(caller)))]
        }
        if let collection = SecretPaths.collection(named: path) {
            guard interface == Self.collectionInterface || interface.isEmpty else { return [] }
            try requireCollection(collection, caller)
            let (items, locked) = try self.items(in: collection, caller, matching: [:])
            let modified = try withStore(collection, caller) { store -> UInt64 in
                var status = stat()
                return stat(store.path, &status) == 0 ? UInt64(status.st_mtim.tv_sec) : 0
            }
            return [
                ("Items", .objectPaths(items.map(\.path))), ("Label", .string(Self.label(of: collection))), ("Locked", .bool(locked)),
                ("Created", .uint64(modified)), ("Modified", .uint64(modified)),
            ]
        }
        if SecretPaths.item(path) != nil {
            guard interface == Self.itemInterface || interface.isEmpty else { return [] }
            let (collection, reference) = try item(path, caller)
            return try withStore(collection, caller) { store in
                let attributes = try self.attributes(reference, store)
                let record = SecretItemRecord(attributes)
                func seconds(_ key: AttributeKey) -> UInt64 {
                    if case .date(let date)? = attributes[key] { return UInt64(max(0, date.timeIntervalSince1970)) }
                    return 0
                }
                var label = ""
                if case .string(let text)? = attributes[.label] { label = text }
                return [
                    ("Locked", .bool(store.isLocked)), ("Attributes", .stringDictionary(record.attributes)), ("Label", .string(label)),
                    ("Created", .uint64(seconds(.creationDate))), ("Modified", .uint64(seconds(.modificationDate))),
                ]
            }
        }
        if path.hasPrefix(SecretPaths.sessions) || path.hasPrefix(SecretPaths.prompts) { return [] }
        throw BusError(.noSuchObject, "\(path) is no object of the Secret Service")
    }

    private func setProperty(_ path: String, _ interface: String, _ name: String, _ value: BusValue?, _ caller: Caller, _ sender: String) throws {
        guard interface == Self.itemInterface, SecretPaths.item(path) != nil else {
            throw BusError(.notSupported, "only an item's Label and Attributes can be set")
        }
        let (collection, reference) = try item(path, caller)
        try withStore(collection, caller) { store in
            let attributes = try self.attributes(reference, store)
            var record = SecretItemRecord(attributes)
            var label = ""
            if case .string(let text)? = attributes[.label] { label = text }
            let changes: ItemAttributes
            switch (name, value) {
            case ("Label", .string(let text)?):
                changes = [.label: .string(text)]
            case ("Attributes", .stringDictionary(let dictionary)?):
                record.attributes = dictionary
                changes = try record.keychainAttributes(label: label)
            default:
                throw BusError(.invalidArguments, "\(name) is not a property that takes this value (Label: s, Attributes: a{ss})")
            }
            _ = try store.update(ItemQuery(nil, persistentReference: reference), attributes: changes, data: nil)
        }
        bus?.signal(collection, Self.collectionInterface, "ItemChanged", to: sender) { try $0.objectPath(path) }
    }

    // MARK: Items

    private struct FoundItem {
        let path: String
        let record: SecretItemRecord
    }

    /// The caller's items in `collection` that have `query`'s attributes, and whether the collection is locked.
    private func items(in collection: String, _ caller: Caller, matching query: [String: String]) throws -> (items: [FoundItem], locked: Bool) {
        try withStore(collection, caller) { store in
            let found: [KeychainItem]
            do {
                found = try store.find(ItemQuery(.genericPassword, limit: .all, returning: [.attributes, .persistentReference]))
            } catch let error as KeychainError where error.code == .itemNotFound {
                found = []
            }
            let items = found.compactMap { item -> FoundItem? in
                guard let reference = item.persistentReference, let attributes = item.attributes else { return nil }
                let record = SecretItemRecord(attributes)
                return record.matches(query) ? FoundItem(path: SecretPaths.item(reference, in: collection), record: record) : nil
            }
            return (items, store.isLocked)
        }
    }

    private func createItem(
        in collection: String, _ properties: [String: BusValue], _ wire: WireSecret, replace: Bool, _ sender: String, _ caller: Caller
    ) throws -> String {
        var label = ""
        if case .string(let text)? = properties["org.freedesktop.Secret.Item.Label"] { label = text }
        var attributes: [String: String] = [:]
        if case .stringDictionary(let dictionary)? = properties["org.freedesktop.Secret.Item.Attributes"] { attributes = dictionary }
        let (session, _) = try self.session(wire.session, sender)
        let plain = try session.decode(wire)
        let record = SecretItemRecord(attributes: attributes, contentType: wire.contentType.isEmpty ? "text/plain" : wire.contentType)
        try keychains.checkQuota(uid: caller.process.identity.uid)
        let existing = replace ? try items(in: collection, caller, matching: attributes).items.first { $0.record.attributes == attributes } : nil
        let path = try withStore(collection, caller) { store -> String in
            if let existing, let found = SecretPaths.item(existing.path) {
                var changes = try record.keychainAttributes(label: label)
                changes[.account] = nil  // the account it was stored under stays (it may carry a suffix)
                _ = try store.update(ItemQuery(nil, persistentReference: found.reference), attributes: changes, data: plain.withUnsafeBytes { Data($0) })
                return existing.path
            }
            var keychainAttributes = try record.keychainAttributes(label: label)
            keychainAttributes[.accessGroup] = .string(caller.groups[0])
            let data = plain.withUnsafeBytes { Data($0) }
            let added: KeychainItem
            do {
                added = try store.add(.genericPassword, attributes: keychainAttributes, data: data, returning: .persistentReference)
            } catch let error as KeychainError where error.code == .duplicateItem {
                // Another item with other attributes has this service and account: this one's account is told apart.
                var suffix = [UInt8](repeating: 0, count: 4)
                _ = suffix.withUnsafeMutableBytes { getentropy($0.baseAddress, 4) }
                if case .string(let account)? = keychainAttributes[.account] {
                    keychainAttributes[.account] = .string(account + " #" + suffix.map { String(format: "%02x", $0) }.joined())
                }
                added = try store.add(.genericPassword, attributes: keychainAttributes, data: data, returning: .persistentReference)
            }
            guard let reference = added.persistentReference else { throw BusError(.failed, "the keychain gave no reference for the item") }
            return SecretPaths.item(reference, in: collection)
        }
        bus?.signal(collection, Self.collectionInterface, existing == nil ? "ItemCreated" : "ItemChanged", to: sender) { try $0.objectPath(path) }
        return path
    }

    /// The secret of the item at `path`, for the session.
    private func secret(of path: String, _ caller: Caller, session: SecretSession, sessionPath: String) throws -> WireSecret {
        let (collection, reference) = try item(path, caller)
        return try withStore(collection, caller) { store in
            guard !store.isLocked else { throw BusError(.isLocked, "\(collection) is locked: unlock it first") }
            guard let item = try store.find(ItemQuery(nil, persistentReference: reference, returning: [.data, .attributes])).first,
                item.itemClass == .genericPassword, let data = item.data
            else { throw BusError(.noSuchObject, "\(path) is not an item of the caller") }
            let record = SecretItemRecord(item.attributes ?? [:])
            return try session.encode(SecretBytes(data), session: sessionPath, contentType: record.contentType)
        }
    }

    /// The collection and persistent reference of an item path in one of the caller's collections. Whether the
    /// caller has such an item is the store's answer to the operation on it (a reference outside the caller's
    /// groups finds nothing: `NoSuchObject`).
    private func item(_ path: String, _ caller: Caller) throws -> (collection: String, reference: Data) {
        guard let found = SecretPaths.item(path) else { throw BusError(.noSuchObject, "\(path) is not an item path") }
        try requireCollection(found.collection, caller)
        return found
    }

    private func attributes(_ reference: Data, _ store: EmbeddedKeychain) throws -> ItemAttributes {
        do {
            guard let item = try store.find(ItemQuery(nil, persistentReference: reference, returning: .attributes)).first,
                item.itemClass == .genericPassword, let attributes = item.attributes
            else { throw BusError(.noSuchObject, "no such item of the caller") }
            return attributes
        } catch let error as KeychainError where error.code == .itemNotFound || error.code == .parameter {
            throw BusError(.noSuchObject, "no such item of the caller")
        }
    }

    // MARK: Collections

    /// The caller's collections: its default keychain, then its other keychains in the service.
    private func collectionPaths(_ caller: Caller) -> [String] {
        [SecretPaths.login] + keychains.keychainNames(uid: caller.process.identity.uid).map { SecretPaths.collection($0) }
    }

    private func requireCollection(_ collection: String, _ caller: Caller) throws {
        guard collection == SecretPaths.login || collectionPaths(caller).contains(collection) else { throw BusError(.noSuchObject, "\(collection) is not a collection of the caller") }
    }

    /// The collection of an object path: itself, or the item's.
    private func collectionOf(_ object: String) throws -> String {
        if let collection = SecretPaths.collection(named: object) { return collection }
        if let found = SecretPaths.item(object) { return found.collection }
        throw BusError(.noSuchObject, "\(object) is neither a collection nor an item")
    }

    private static func label(of collection: String) -> String {
        guard case .some(.some(let name)) = SecretPaths.keychain(ofCollection: collection) else { return "Login" }
        return name
    }

    private func createCollection(_ properties: [String: BusValue], alias: String, _ caller: Caller) throws -> String {
        if alias == "default" { return SecretPaths.login }
        guard alias.isEmpty else { throw BusError(.notSupported, "the only alias is default") }
        var label = ""
        if case .string(let text)? = properties["org.freedesktop.Secret.Collection.Label"] { label = text }
        // The keychain's name: the label's letters, digits, '.', '_' and '-', others as '-'.
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        var name = String(label.map { allowed.contains($0) ? $0 : "-" }.drop { $0 == "." }.prefix(64))
        if name.isEmpty { name = "collection" }
        do {
            try keychains.createKeychain(uid: caller.process.identity.uid, name: name, groups: caller.groups)
        } catch let error as KeychainError {
            throw BusError(.failed, "the keychain \(name) cannot be created: \(error.reason)")
        }
        return SecretPaths.collection(name)
    }

    // MARK: Callers and stores

    /// The caller the bus names: identified once per bus connection from the pid and uid the bus daemon recorded,
    /// and checked before each call to still run the program it ran.
    private func identify(_ sender: String, _ message: OpaquePointer) throws -> Caller {
        if let known = callers[sender] {
            if (try? known.process.verify()) != nil { return known }
            callers[sender] = nil
            throw BusError(.accessDenied, "the caller runs another program than when it was identified")
        }
        var uid: uid_t = 0
        var pid: pid_t = 0
        guard csdbus_sender(message, &uid, &pid) >= 0, pid > 0 else { throw BusError(.accessDenied, "the bus does not say who the caller is") }
        guard uid == geteuid() else { throw BusError(.accessDenied, "the caller is another user (uid \(uid)): the service keeps uid \(geteuid())'s keychains") }
        let process: PeerProcess
        do { process = try PeerProcess.of(pid: pid, uid: uid) } catch {
            throw BusError(.accessDenied, "the caller cannot be identified: \(error)")
        }
        // The daemon gives no pidfd here (ProcessFD is newer than Debian 12's dbus-daemon and dbus-broker): the pid is
        // pinned by the pidfd PeerProcess opened, and the daemon is asked again whether the connection still has it.
        // A caller that exited before the pin had its connection closed first, so a recycled pid is refused unless the
        // daemon has not yet seen that close.
        guard csdbus_sender_still(message, sender, pid) == 1 else {
            throw BusError(.accessDenied, "the caller left the bus while it was identified")
        }
        let groups = sharing == .everyone ? [SecretServiceSharing.sharedGroup] : keychains.accessGroups(for: process.identity)
        guard !groups.isEmpty else {
            throw BusError(.accessDenied,
                "the caller is a script interpreter (\(process.identity.executablePath)): every script it runs would share its items, so only "
                    + "a policy entry grants it access groups (or securityd --secret-service-sharing everyone)")
        }
        if callers.count >= 1024 { callers.removeAll() }
        let caller = Caller(process: process, groups: groups)
        callers[sender] = caller
        return caller
    }

    private func session(_ path: String, _ sender: String) throws -> (SecretSession, String) {
        guard let session = sessions[path], session.owner == sender else { throw BusError(.noSession, "\(path) is not a session the caller opened") }
        return (session, path)
    }

    /// Runs `body` on the caller's store of `collection`, as a request of the caller on the socket would.
    private func withStore<R>(_ collection: String, _ caller: Caller, _ body: (EmbeddedKeychain) throws -> R) throws -> R {
        guard case .some(let keychain) = SecretPaths.keychain(ofCollection: collection) else {
            throw BusError(.noSuchObject, "\(collection) is not a collection")
        }
        do {
            return try keychains.withStore(for: caller.process.identity, keychain: keychain, groups: caller.groups, body)
        } catch let error as KeychainError {
            switch error.code {
            case .itemNotFound: throw BusError(.noSuchObject, error.reason)
            case .interactionNotAllowed, .authFailed: throw BusError(.isLocked, error.reason)
            case .missingEntitlement: throw BusError(.accessDenied, error.reason)
            case .parameter: throw BusError(.invalidArguments, error.reason)
            default: throw BusError(.failed, error.reason)
            }
        }
    }

    // MARK: Introspection

    static func introspection(_ path: String) -> String {
        var interfaces: [String] = []
        var children: [String] = []
        if path == SecretPaths.service {
            interfaces = [serviceInterface]
            children = ["collection", "aliases", "session"]
        } else if SecretPaths.keychain(ofCollection: path) != nil {
            interfaces = [collectionInterface]
        } else if SecretPaths.item(path) != nil {
            interfaces = [itemInterface]
        } else if path.hasPrefix(SecretPaths.sessions) {
            interfaces = [sessionInterface]
        } else if path.hasPrefix(SecretPaths.prompts) {
            interfaces = [promptInterface]
        }
        let body = (interfaces + [propertiesInterface]).map { "  <interface name=\"\($0)\"/>\n" }.joined()
            + children.map { "  <node name=\"\($0)\"/>\n" }.joined()
        return "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n"
            + "\"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n<node>\n" + body + "</node>\n"
    }
}
