import Foundation
import Security
import Testing

/// What the test callbacks saw of one keychain: each event with its keychain's path and, for item events, the
/// item's account. (Callbacks are process-wide: other suites' keychains, running at the same time, are left out.)
final class ReceivedEvents: @unchecked Sendable {
    // @unchecked: every access holds `lock`.
    private let lock = NSLock()
    private let path: String
    private var events: [(event: SecKeychainEvent, path: String, account: String?, pid: pid_t)] = []

    init(path: String) { self.path = path }

    func append(_ event: SecKeychainEvent, path: String, account: String?, pid: pid_t) {
        guard path == self.path else { return }
        lock.withLock { events.append((event, path, account, pid)) }
    }

    var all: [(event: SecKeychainEvent, path: String, account: String?, pid: pid_t)] { lock.withLock { events } }

    /// Waits (at most 5 s) until `count` events have arrived.
    func wait(for count: Int) async throws {
        for _ in 0..<500 where all.count < count { try await Task.sleep(for: .milliseconds(10)) }
    }
}

/// A callback as macOS code writes one: a C function that reads the event's keychain path and item through the
/// Security calls, and reaches its state through the context pointer.
private let recordingCallback: SecKeychainCallback = { event, info, context in
    let received = Unmanaged<ReceivedEvents>.fromOpaque(context!).takeUnretainedValue()
    var path = [CChar](repeating: 0, count: 4096)
    var length = UInt32(path.count)
    _ = SecKeychainGetPath(info.pointee.keychain.takeUnretainedValue(), &length, &path)
    var account: String?
    if event == .addEvent || event == .updateEvent {
        // malloc'ed: SecKeychainItemFreeContent frees the list's array with free(3), as Apple's does.
        let attributes = malloc(MemoryLayout<SecKeychainAttribute>.stride)!.bindMemory(to: SecKeychainAttribute.self, capacity: 1)
        attributes.initialize(to: SecKeychainAttribute(tag: SecItemAttr.accountItemAttr.rawValue, length: 0, data: nil))
        var list = SecKeychainAttributeList(count: 1, attr: attributes)
        if SecKeychainItemCopyContent(info.pointee.item.takeUnretainedValue(), nil, &list, nil, nil) == errSecSuccess, let data = attributes.pointee.data {
            account = String(decoding: UnsafeRawBufferPointer(start: data, count: Int(attributes.pointee.length)), as: UTF8.self)
        }
        _ = SecKeychainItemFreeContent(&list, nil)
    }
    received.append(event, path: String(decoding: path.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), account: account, pid: info.pointee.pid)
    return errSecSuccess
}

private let otherCallback: SecKeychainCallback = { _, _, _ in errSecSuccess }

extension PasswordKeychainSuites {
    @Suite("Security: SecKeychainAddCallback")
    struct SecKeychainCallbackTests {
        @Test("a C callback gets add, update, delete, lock, unlock and password-change events in order, with the keychain and item, for its mask only; duplicate and unknown registrations are refused")
        func callbacks() async throws {
            let password = Array("callback password".utf8)
            let (keychain, path) = try PasswordKeychainSuites.createKeychain(password)
            defer { _ = SecKeychainDelete(keychain) }

            let received = ReceivedEvents(path: path)
            let context = Unmanaged.passRetained(received).toOpaque()
            defer { Unmanaged<ReceivedEvents>.fromOpaque(context).release() }
            let mask: SecKeychainEventMask = [.addEventMask, .updateEventMask, .deleteEventMask, .lockEventMask, .unlockEventMask, .passwordChangedEventMask]
            #expect(SecKeychainAddCallback(recordingCallback, mask, context) == errSecSuccess)
            #expect(SecKeychainAddCallback(recordingCallback, .everyEventMask, context) == errSecDuplicateCallback)
            #expect(SecKeychainRemoveCallback(otherCallback) == errSecInvalidCallback)

            var item: SecKeychainItem?
            let secret = Array("s3cret".utf8)
            #expect(SecKeychainAddGenericPassword(keychain, 4, "mail", 5, "alice", UInt32(secret.count), secret, &item) == errSecSuccess)
            // Delivery is asynchronous, as Apple's: the callback reads the item while it still exists.
            try await received.wait(for: 1)
            let changed = Array("changed".utf8)
            #expect(SecKeychainItemModifyAttributesAndData(try #require(item), nil, UInt32(changed.count), changed) == errSecSuccess)
            try await received.wait(for: 2)
            #expect(SecKeychainItemDelete(try #require(item)) == errSecSuccess)
            #expect(SecKeychainLock(keychain) == errSecSuccess)
            #expect(SecKeychainUnlock(keychain, UInt32(password.count), password, true) == errSecSuccess)
            let newPassword = Array("new callback password".utf8)
            #expect(SecKeychainChangePassword(keychain, UInt32(password.count), password, UInt32(newPassword.count), newPassword) == errSecSuccess)
            try await received.wait(for: 6)

            let events = received.all
            #expect(events.map(\.event) == [.addEvent, .updateEvent, .deleteEvent, .lockEvent, .unlockEvent, .passwordChangedEvent])
            #expect(events.allSatisfy { $0.path == path && $0.pid == getpid() }, "\(events.map(\.path))")
            #expect(events.map(\.account) == ["alice", "alice", nil, nil, nil, nil])

            // A mask without lock events: a lock is not delivered, the next add is.
            #expect(SecKeychainRemoveCallback(recordingCallback) == errSecSuccess)
            #expect(SecKeychainAddCallback(recordingCallback, [.addEventMask], context) == errSecSuccess)
            #expect(SecKeychainLock(keychain) == errSecSuccess)
            #expect(SecKeychainUnlock(keychain, UInt32(newPassword.count), newPassword, true) == errSecSuccess)
            #expect(SecKeychainAddGenericPassword(keychain, 4, "mail", 3, "bob", UInt32(secret.count), secret, nil) == errSecSuccess)
            try await received.wait(for: 7)
            #expect(received.all.count == 7 && received.all.last?.event == .addEvent && received.all.last?.account == "bob")

            // Removed: nothing more arrives.
            #expect(SecKeychainRemoveCallback(recordingCallback) == errSecSuccess)
            #expect(SecKeychainRemoveCallback(recordingCallback) == errSecInvalidCallback)
            #expect(SecKeychainAddGenericPassword(keychain, 4, "mail", 5, "carol", UInt32(secret.count), secret, nil) == errSecSuccess)
            try await Task.sleep(for: .milliseconds(200))
            #expect(received.all.count == 7)
        }
    }
}
