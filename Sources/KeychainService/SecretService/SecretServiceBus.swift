internal import CEpoll
internal import CSDBus
import Foundation
import Keychain
import Synchronization

/// The connection to the user's session bus that the Secret Service is served on: it owns the `sd_bus`, holds the
/// name `org.freedesktop.secrets`, and hands each call under `/org/freedesktop/secrets` to the front. sd-bus serves
/// one thread: the calls are answered one at a time on the thread that runs ``serve(_:)``; a thread that waited for
/// something else (a prompt) hands its outcome back with ``post(_:)``.
final class SecretServiceBus: @unchecked Sendable {
    // @unchecked: `bus` is used on the serving thread only; other threads reach it through `post`, whose queue is a
    // Mutex and whose wake-up is an eventfd.
    private let bus: OpaquePointer
    /// Wakes the serving thread when work is posted.
    private let wake: Int32
    private let posted = Mutex<[@Sendable () -> Void]>([])

    static let name = "org.freedesktop.secrets"

    /// Connects to the session bus: `address` when given, else `DBUS_SESSION_BUS_ADDRESS`, else the user's
    /// `$XDG_RUNTIME_DIR/bus`.
    /// - Throws: ``KeychainError`` `.io` when there is no bus to connect to.
    init(address: String?) throws {
        var bus: OpaquePointer?
        var result: Int32
        if let address {
            result = sd_bus_new(&bus)
            if result >= 0 { result = address.withCString { sd_bus_set_address(bus, $0) } }
            if result >= 0 { result = sd_bus_set_bus_client(bus, 1) }
            if result >= 0 { result = sd_bus_start(bus) }
        } else {
            result = sd_bus_open_user(&bus)
        }
        guard result >= 0, let bus else {
            sd_bus_unref(bus)
            throw KeychainError(.io, "no session bus to serve the Secret Service on: \(String(cString: strerror(-result)))")
        }
        let wake = ceventfd_create()
        guard wake >= 0 else {
            sd_bus_unref(bus)
            throw KeychainError(.io, "the Secret Service cannot make its wake-up descriptor", errno: errno)
        }
        self.bus = bus
        self.wake = wake
    }

    deinit {
        sd_bus_flush_close_unref(bus)
        close(wake)
    }

    /// Takes the name and answers calls until the bus connection ends (the session ended).
    /// - Throws: ``KeychainError`` `.io` when the name is another service's (gnome-keyring-daemon, KWallet) or
    ///   the bus fails.
    func serve(_ front: SecretServiceFront) throws {
        let context = Unmanaged.passRetained(front)
        defer { context.release() }
        var result = sd_bus_add_fallback(bus, nil, SecretPaths.service, { message, userdata, _ in
            guard let message, let userdata else { return 0 }
            return Unmanaged<SecretServiceFront>.fromOpaque(userdata).takeUnretainedValue().handle(message)
        }, context.toOpaque())
        guard result >= 0 else { throw KeychainError(.io, "the Secret Service's objects cannot be registered: \(String(cString: strerror(-result)))") }
        // A client that leaves the bus leaves its sessions, prompts and identity behind: the front forgets them.
        result = sd_bus_add_match(
            bus, nil, "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged'",
            { message, userdata, _ in
                guard let message, let userdata else { return 0 }
                let arguments = BusReader(message: message)
                guard let name = try? arguments.string(), (try? arguments.string()) != nil, let owner = try? arguments.string(), owner.isEmpty
                else { return 0 }
                Unmanaged<SecretServiceFront>.fromOpaque(userdata).takeUnretainedValue().forget(name)
                return 0
            }, context.toOpaque())
        guard result >= 0 else { throw KeychainError(.io, "the Secret Service cannot follow clients leaving: \(String(cString: strerror(-result)))") }
        result = sd_bus_request_name(bus, Self.name, 0)
        guard result >= 0 else {
            throw KeychainError(
                .io,
                "the bus name \(Self.name) is not ours: \(String(cString: strerror(-result))) (another Secret Service, such as gnome-keyring-daemon, holds it)")
        }
        front.bus = self
        while true {
            result = sd_bus_process(bus, nil)
            if result > 0 { continue }
            if result < 0 {
                // The bus went away: the session is over.
                if [ECONNRESET, ENOTCONN, EPIPE].contains(-result) { return }
                throw KeychainError(.io, "the session bus failed: \(String(cString: strerror(-result)))")
            }
            try wait()
            for work in posted.withLock({ work in defer { work = [] }; return work }) { work() }
        }
    }

    /// Waits for the bus or for work posted from another thread (``post(_:)``).
    private func wait() throws {
        let events = sd_bus_get_events(bus)
        guard events >= 0 else { throw KeychainError(.io, "the session bus failed: \(String(cString: strerror(-events)))") }
        var timeout: UInt64 = UInt64.max
        _ = sd_bus_get_timeout(bus, &timeout)
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        let milliseconds: Int32 =
            timeout == UInt64.max ? -1 : Int32(clamping: timeout > nowMicroseconds ? (timeout - nowMicroseconds + 999) / 1000 : 0)
        var descriptors = [
            pollfd(fd: sd_bus_get_fd(bus), events: Int16(events), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
        ]
        if poll(&descriptors, 2, milliseconds) < 0, errno != EINTR {
            throw KeychainError(.io, "the session bus cannot be waited for", errno: errno)
        }
        var count: UInt64 = 0
        if descriptors[1].revents != 0 { _ = read(wake, &count, 8) }
    }

    /// Runs `work` on the bus's thread (sd-bus serves one thread): what a thread that waited for a person or a
    /// program (a prompt) hands back.
    func post(_ work: @escaping @Sendable () -> Void) {
        posted.withLock { $0.append(work) }
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
    }

    /// Sends the signal `member` of `interface` from `path` to `destination` alone (a unicast signal: other
    /// clients do not learn of another application's items).
    func signal(_ path: String, _ interface: String, _ member: String, to destination: String, _ body: (BusWriter) throws -> Void) {
        var message: OpaquePointer?
        guard sd_bus_message_new_signal(bus, &message, path, interface, member) >= 0, let message else { return }
        defer { sd_bus_message_unref(message) }
        guard sd_bus_message_set_destination(message, destination) >= 0, (try? body(BusWriter(message: message))) != nil else { return }
        _ = sd_bus_send(bus, message, nil)
    }
}
