public import ArgumentParser
import Foundation
import KeychainService

/// `securityd`: the keychain service. Runs in the foreground (for systemd, containers and tests); with systemd's
/// socket activation it serves the socket it is handed.
@main
struct SecurityDaemon: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "securityd",
        abstract: "The keychain service: keychains owned by this daemon, callers identified by the kernel.",
        discussion: """
            Each caller is identified from its socket (SO_PEERCRED and a pidfd: uid, pid, executable, SHA-256 of the \
            binary) and gets the access groups the policy files grant it (--policy-directory, and \
            DIRECTORY/UID/applications.d), else a group of its own derived from its binary. Every uid has its own \
            keychain, DIRECTORY/UID/keychain.db. With systemd socket activation (LISTEN_FDS=1) the socket handed \
            over is served instead of --socket.
            """)

    @Option(name: .long, help: "The Unix socket to listen on (its directory must be this daemon's, writable by no one else).")
    var socket: String = getuid() == 0 ? "/run/securityservices/securityd.sock" : Self.userRuntime.map { $0 + "/securityd.sock" } ?? ""

    @Option(name: .long, help: "Where the keychains and their keys are kept (created 0700).")
    var directory: String = getuid() == 0 ? "/var/lib/securityservices" : Self.userData + "/service"

    @Option(name: .customLong("policy-directory"), help: "A directory of application policy files (repeatable).")
    var policyDirectories: [String] = ["/etc/securityservices/applications.d"]

    @Option(name: .customLong("idle-timeout"), help: "Seconds after which a silent connection is closed.")
    var idleTimeout: Int = 60

    @Option(name: .customLong("maximum-connections"), help: "Connections served at once; more are answered with an error and closed.")
    var maximumConnections: Int = 1024

    @Option(name: .customLong("maximum-connections-per-user"), help: "Connections one uid may hold at once; more are refused.")
    var maximumConnectionsPerUser: Int = 256

    @Option(name: .customLong("frame-deadline"), help: "Seconds within which a message must arrive whole, from its first byte.")
    var frameDeadline: Int = 10

    @Flag(
        name: .customLong("secret-service"),
        help: "Also serve the freedesktop Secret Service API on the user's session bus (org.freedesktop.secrets), over the same keychains; the daemon ends with the session bus.")
    var secretService = false

    @Option(
        name: .customLong("secret-service-sharing"),
        help: "Who sees which Secret Service item: application (each application its own, by policy; the default) or everyone (every process of the user, as gnome-keyring).")
    var sharing: SecretServiceSharing = .perApplication

    @Option(
        name: .customLong("prompter"),
        help: "A program that asks the user for a locked keychain's password and prints it (ssh-askpass, or a script around zenity --password): Secret Service clients' Unlock then prompts. Without it, Unlock of a locked keychain is refused, saying how to unlock it.")
    var prompter: String?

    @Option(name: .customLong("quota"), help: "Bytes the keychains of one uid may hold on disk; writes past them are refused.")
    var quota: Int64 = 256 << 20

    /// The user's runtime directory's `securityservices`; nil without `XDG_RUNTIME_DIR` (never a shared directory
    /// such as /tmp, where another user could have made it first).
    static var userRuntime: String? {
        ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].flatMap { $0.hasPrefix("/") ? $0 + "/securityservices" : nil }
    }

    static var userData: String {
        let environment = ProcessInfo.processInfo.environment
        // $HOME as the user's session sets it (a service D-Bus starts inherits it), else the password database's.
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory()
        let base = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? (home + "/.local/share")
        return base + "/securityservices"
    }

    func validate() throws {
        guard !socket.isEmpty else { throw ValidationError("No XDG_RUNTIME_DIR to put the socket in: pass --socket.") }
        guard idleTimeout > 0 else { throw ValidationError("--idle-timeout takes a positive number of seconds.") }
        guard maximumConnections > 0 else { throw ValidationError("--maximum-connections takes a positive number.") }
        guard maximumConnectionsPerUser > 0 else { throw ValidationError("--maximum-connections-per-user takes a positive number.") }
        guard frameDeadline > 0 else { throw ValidationError("--frame-deadline takes a positive number of seconds.") }
        guard quota > 0 else { throw ValidationError("--quota takes a positive number of bytes.") }
        if let prompter, !FileManager.default.isExecutableFile(atPath: prompter) {
            throw ValidationError("--prompter takes the path of an executable program.")
        }
    }

    func run() throws {
        // A parent's blocked signals are inherited (a process started from a Dispatch thread has SIGTERM blocked):
        // the daemon must stop on SIGTERM, as systemd and container runtimes send it.
        var signals = sigset_t()
        sigfillset(&signals)
        sigprocmask(SIG_UNBLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)
        // Each connection is a descriptor: as many as the hard limit allows (systemd's soft default is 1,024).
        var descriptors = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &descriptors) == 0, descriptors.rlim_cur < descriptors.rlim_max {
            descriptors.rlim_cur = descriptors.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &descriptors)
        }
        do {
            try KeychainService.protectProcessMemory()
        } catch {
            FileHandle.standardError.write(Data("securityd: \(error)\n".utf8))
            throw ExitCode(1)
        }
        let environment = ProcessInfo.processInfo.environment
        let activated = environment["LISTEN_FDS"] == "1" && environment["LISTEN_PID"] == String(getpid())
        if !activated {
            // The socket's directory (the directory the keychains live in is made by the service).
            let parent = (socket as NSString).deletingLastPathComponent
            try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        }
        // The socket's directory and the policy directories are checked by the service (socket activation's socket
        // is systemd's).
        let base = (directory as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let service: KeychainService
        do {
            service = try KeychainService(
                .init(
                    socketPath: socket, directory: directory, policyDirectories: policyDirectories,
                    idleTimeout: .seconds(idleTimeout), maximumConnections: maximumConnections,
                    maximumConnectionsPerUser: maximumConnectionsPerUser, frameDeadline: .seconds(frameDeadline),
                    maximumStoredBytesPerUser: quota),
                listeningSocket: activated ? 3 : nil)
        } catch {
            FileHandle.standardError.write(Data("securityd: \(error)\n".utf8))
            throw ExitCode(1)
        }
        FileHandle.standardError.write(Data("securityd: serving \(activated ? "the activated socket" : socket), keychains in \(directory)\n".utf8))
        guard secretService else {
            service.run()
            return
        }
        service.start()
        do {
            try service.serveSecretService(sharing: sharing, prompter: prompter)
        } catch {
            FileHandle.standardError.write(Data("securityd: \(error)\n".utf8))
            throw ExitCode(1)
        }
        service.stop()
    }
}

/// `--secret-service-sharing application|everyone`.
extension SecretServiceSharing: ExpressibleByArgument {}
