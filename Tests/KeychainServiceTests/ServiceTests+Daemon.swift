import Foundation
import Keychain
import TestVectors
import Testing

extension ServiceTests {
    @Suite("Keychain service: the securityd daemon, its memory and its crashes")
    struct Daemon {
        /// The `securityd` binary, built next to the test bundle.
        static var daemon: URL {
            get throws { try BuiltExecutable.named("securityd") }
        }

        /// Starts `securityd` in the foreground on `socket`, waiting until it accepts.
        static func startDaemon(socket: String, directory: String) throws -> Process {
            let process = Process()
            process.executableURL = try daemon
            process.arguments = ["--socket", socket, "--directory", directory, "--policy-directory", directory + "-policy"]
            process.standardError = FileHandle.nullDevice
            try process.run()
            for _ in 0..<200 {
                if (try? KeychainServiceClient(socketPath: socket)) != nil { return process }
                usleep(25_000)
            }
            process.terminate()
            throw KeychainError(.io, "securityd did not start")
        }

        @Test("securityd is non-dumpable: another process of its uid cannot read its /proc environ (as it can a dumpable process's)", .enabled(if: getuid() == 0))
        func daemonMemoryIsPrivate() throws {
            let daemon = try DeployedKeychainService()
            let uid = DeployedKeychainService.daemonUID
            func readable(_ pid: Int32) throws -> Bool {
                try DeployedKeychainService.run("/bin/sh", ["-c", "cat /proc/\(pid)/environ >/dev/null 2>&1 && echo yes"], uid: uid) == "yes"
            }
            let control = Process()
            control.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            control.arguments = ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/bin/sleep", "30"]
            try control.run()
            defer { control.terminate() }
            usleep(100_000)
            #expect(try readable(control.processIdentifier), "a dumpable process of the same uid is readable: the check works")
            #expect(try !readable(daemon.process.processIdentifier), "securityd's memory and environment are not")
        }

        @Test("kill -9 of securityd during 1,000 adds loses no acknowledged item; the restarted daemon serves them all")
        func killedDaemon() async throws {
            let world = try ServiceWorld()
            let socket = world.directory.path("daemon.sock")
            let directory = world.directory.path("daemon-keychains")
            let killAt = Int.random(in: 200...800)
            // The adds and the kill block: on a thread of their own (see concurrentClients).
            let (acknowledged, killedBySignal) = try await onOwnThread { () throws -> (Int, Bool) in
                let daemon = try Self.startDaemon(socket: socket, directory: directory)
                let store = try KeychainStore(service: socket)
                var acknowledged = 0
                for index in 0..<1000 {
                    if index == killAt { kill(daemon.processIdentifier, SIGKILL) }
                    do {
                        try store.add(
                            .genericPassword, attributes: [.account: .string("item-\(index)"), .service: .string("kill")],
                            data: Data("secret-\(index)".utf8))
                        acknowledged = index + 1
                    } catch {
                        break
                    }
                }
                daemon.waitUntilExit()
                return (acknowledged, daemon.terminationReason == .uncaughtSignal)
            }
            #expect(killedBySignal)
            #expect(acknowledged >= killAt && acknowledged < 1000, "the kill came at \(killAt), \(acknowledged) acknowledged")
            let daemon = try Self.startDaemon(socket: socket, directory: directory)
            defer {
                daemon.terminate()  // SIGTERM: the daemon stops at once
                daemon.waitUntilExit()
            }
            let again = try KeychainStore(service: socket)
            let items = try again.find(ItemQuery(.genericPassword, matching: [.service: .string("kill")], limit: .all, returning: [.attributes, .data]))
            var found: [String: Data] = [:]
            for item in items {
                if case .string(let account)? = item.attributes?[.account] { found[account] = item.data }
            }
            for index in 0..<acknowledged where found["item-\(index)"] != Data("secret-\(index)".utf8) {
                Issue.record("acknowledged item-\(index) is missing or wrong after the restart")
            }
            // At most the one add in flight at the kill was written without its acknowledgement.
            #expect(items.count == acknowledged || items.count == acknowledged + 1, "\(items.count) items, \(acknowledged) acknowledged")
        }
    }
}
