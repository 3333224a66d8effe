@_exported public import CSecurityTypes
import Foundation
import Keychain
import Synchronization

// Apple's keychain event callbacks (SecKeychain.h): a C function registered for a mask of events, called with the
// event, the keychain and item it concerns, and the caller's context pointer. Apple delivers them on the run loop of
// the thread that registered; here, in order, on one serial Dispatch queue (never on the thread that made the
// change, which may hold a keychain's lock). Events come from this process's keychain calls (KeychainEvents).

/// What a callback is told about an event (Apple's `SecKeychainCallbackInfo`, declared in C so that the callback
/// can be a C function; these are Apple's Swift names for its fields).
extension SecKeychainCallbackInfo {
    /// The item added, updated or deleted; for events without one (lock, unlock, password change), an item that
    /// names none (Apple passes NULL there, which its Swift declaration does not allow for).
    public var item: Unmanaged<SecKeychainItem> {
        get { Unmanaged.fromOpaque(opaqueItem) }
        set { opaqueItem = newValue.toOpaque() }
    }

    /// The keychain of the event.
    public var keychain: Unmanaged<SecKeychain> {
        get { Unmanaged.fromOpaque(opaqueKeychain) }
        set { opaqueKeychain = newValue.toOpaque() }
    }

    public init(version: UInt32, item: Unmanaged<SecKeychainItem>, keychain: Unmanaged<SecKeychain>, pid: pid_t) {
        self.init(version: version, opaqueItem: item.toOpaque(), opaqueKeychain: keychain.toOpaque(), pid: pid)
    }
}

public typealias SecKeychainCallback =
    @convention(c) (SecKeychainEvent, UnsafeMutablePointer<SecKeychainCallbackInfo>, UnsafeMutableRawPointer?) -> OSStatus

/// The registered callbacks, and the one observation of the keychain's events that feeds them.
private enum KeychainCallbacks {
    struct Registration: Sendable {
        /// The C function's address (the callback's identity, as Apple compares them).
        let function: UInt
        let mask: SecKeychainEventMask
        let context: UInt
    }

    static let state = Mutex<(registrations: [Registration], observation: KeychainEvents.Observation?)>(([], nil))
    static let queue = DispatchQueue(label: "com.securityservices.keychain-callbacks")
    /// The item of events that concern none.
    static let noItem = SecKeychainItem(KeychainItem(itemClass: .genericPassword, attributes: nil, data: nil, persistentReference: nil, identityKeyData: nil))

    static func address(_ callback: SecKeychainCallback) -> UInt { UInt(bitPattern: unsafeBitCast(callback, to: UnsafeRawPointer.self)) }

    static func event(_ kind: KeychainEvent.Kind) -> SecKeychainEvent {
        switch kind {
        case .lock: .lockEvent
        case .unlock: .unlockEvent
        case .add: .addEvent
        case .delete: .deleteEvent
        case .update: .updateEvent
        case .passwordChanged: .passwordChangedEvent
        }
    }

    /// Hands `event` to every callback whose mask has it, on the queue.
    static func deliver(_ event: KeychainEvent) {
        let kind = Self.event(event.kind)
        let bit = SecKeychainEventMask(rawValue: 1 << kind.rawValue)
        let registrations = state.withLock { $0.registrations }.filter { $0.mask.contains(bit) }
        guard !registrations.isEmpty else { return }
        queue.async {
            let keychain = SecKeychain(path: event.path)
            let item =
                event.persistentReference.map { reference in
                    SecKeychainItem(
                        KeychainItem(
                            itemClass: event.itemClass ?? .genericPassword, attributes: nil, data: nil, persistentReference: reference,
                            identityKeyData: nil),
                        // Not made again if it was deleted since (opening a path creates a keychain there).
                        keychain: FileManager.default.fileExists(atPath: event.path) ? try? keychain.store() : nil)
                } ?? noItem
            withExtendedLifetime((keychain, item)) {
                var info = SecKeychainCallbackInfo(
                    version: 0, item: .passUnretained(item), keychain: .passUnretained(keychain), pid: getpid())
                for registration in registrations {
                    let callback = unsafeBitCast(UnsafeRawPointer(bitPattern: registration.function)!, to: SecKeychainCallback.self)
                    _ = callback(kind, &info, UnsafeMutableRawPointer(bitPattern: registration.context))
                }
            }
        }
    }
}

/// Registers `callbackFunction` for the events of `eventMask`; it is called with `userContext`, on a serial queue
/// of its own, after each event of this process's keychain calls.
/// - Returns: `errSecSuccess`; `errSecDuplicateCallback` when that function is registered already.
@discardableResult
public func SecKeychainAddCallback(
    _ callbackFunction: SecKeychainCallback, _ eventMask: SecKeychainEventMask, _ userContext: UnsafeMutableRawPointer?
) -> OSStatus {
    let registration = KeychainCallbacks.Registration(
        function: KeychainCallbacks.address(callbackFunction), mask: eventMask, context: UInt(bitPattern: userContext))
    return KeychainCallbacks.state.withLock { state in
        guard !state.registrations.contains(where: { $0.function == registration.function }) else { return errSecDuplicateCallback }
        state.registrations.append(registration)
        if state.observation == nil { state.observation = KeychainEvents.observe { KeychainCallbacks.deliver($0) } }
        return errSecSuccess
    }
}

/// Unregisters `callbackFunction` (events already queued for it may still arrive).
/// - Returns: `errSecSuccess`; `errSecInvalidCallback` when it is not registered.
@discardableResult
public func SecKeychainRemoveCallback(_ callbackFunction: SecKeychainCallback) -> OSStatus {
    let function = KeychainCallbacks.address(callbackFunction)
    return KeychainCallbacks.state.withLock { state in
        guard let index = state.registrations.firstIndex(where: { $0.function == function }) else { return errSecInvalidCallback }
        state.registrations.remove(at: index)
        if state.registrations.isEmpty, let observation = state.observation {
            KeychainEvents.remove(observation)
            state.observation = nil
        }
        return errSecSuccess
    }
}
