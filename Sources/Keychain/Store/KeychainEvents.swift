public import Foundation
import Synchronization

/// Something that happened to a keychain in this process: an item added, changed or deleted (after its transaction
/// committed), the keychain locked (by a call or by its idle interval), unlocked, or its password changed.
public struct KeychainEvent: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        case lock, unlock, add, delete, update, passwordChanged
    }

    public let kind: Kind
    /// The keychain's database file.
    public let path: String
    /// The item's class, for add, update and delete.
    public let itemClass: ItemClass?
    /// The item's persistent reference, for add (the new item) and update or delete of one item.
    public let persistentReference: Data?
}

/// The observers of ``KeychainEvent``s, process-wide. An observer runs on the thread that made the change, after
/// the change (its transaction committed, its lock released); it must not block.
public enum KeychainEvents {
    public struct Observation: Sendable, Hashable {
        let id: Int
    }

    private struct Observers {
        var next = 0
        var handlers: [Int: @Sendable (KeychainEvent) -> Void] = [:]
    }
    private static let observers = Mutex(Observers())
    /// Whether any observer is registered: a change pays for an event only when someone listens.
    private static let listening = Atomic<Bool>(false)

    /// Registers `handler` for every event from now on.
    public static func observe(_ handler: @escaping @Sendable (KeychainEvent) -> Void) -> Observation {
        observers.withLock { observers in
            observers.next += 1
            observers.handlers[observers.next] = handler
            listening.store(true, ordering: .releasing)
            return Observation(id: observers.next)
        }
    }

    public static func remove(_ observation: Observation) {
        observers.withLock { observers in
            observers.handlers[observation.id] = nil
            listening.store(!observers.handlers.isEmpty, ordering: .releasing)
        }
    }

    static var isListening: Bool { listening.load(ordering: .acquiring) }

    /// Delivers `event` (made only when ``isListening``) to every observer, outside the observers' lock.
    static func post(_ event: @autoclosure () -> KeychainEvent) {
        guard isListening else { return }
        let event = event()
        for handler in observers.withLock({ Array($0.handlers.values) }) { handler(event) }
    }
}
