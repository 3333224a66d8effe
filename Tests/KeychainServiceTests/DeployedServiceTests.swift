import KeychainWire
import Foundation
import Keychain
import KeychainService
import TestVectors
import Testing

/// Two uids of clients (no account needs to exist for them) and the group a granted application is installed
/// setgid to.
private let alice: UInt32 = 61_001
private let bob: UInt32 = 61_002
private let grantedGroup: UInt32 = 61_010

/// A deployed `securityd` (its unit's uid and capabilities), a folder of applications other uids can run, and the
/// attackers: a C program that connects, hands its socket to a child and execs another program, and a library that
/// asks the service from inside whatever program preloads it.
private final class Deployment {
    let daemon: DeployedKeychainService
    let apps: TemporaryDirectory

    init(arguments: [String] = []) throws {
        daemon = try DeployedKeychainService(arguments: arguments)
        apps = try TemporaryDirectory("securityd-apps")
        chmod(apps.url.path, 0o755)
        // Where the attackers, running as alice, write what they got.
        try FileManager.default.createDirectory(atPath: apps.path("out"), withIntermediateDirectories: true)
        chmod(apps.path("out"), 0o777)
    }

    /// A copy of the test application; `setgid` installs it root-owned, setgid to ``grantedGroup`` (2755);
    /// `variant` makes its bytes (and so its SHA-256) differ.
    func application(_ name: String, setgid: Bool = false, variant: UInt8 = 0) throws -> String {
        let path = apps.path(name)
        var bytes = try Data(contentsOf: try BuiltExecutable.named("keychain-service-client"))
        if variant > 0 { bytes.append(contentsOf: [UInt8](repeating: 0x0A, count: Int(variant))) }
        try BuiltExecutable.install(bytes, at: path)
        if setgid {
            chown(path, 0, grantedGroup)
            chmod(path, 0o2755)
        }
        return path
    }

    func run(_ application: String, _ arguments: [String], as uid: UInt32, environment: [String: String] = [:]) throws -> String {
        try DeployedKeychainService.run(application, [daemon.socket] + arguments, uid: uid, environment: environment)
    }

    /// The attackers, compiled with cc: `attacker` and `grab.so`.
    func compileAttackers() throws {
        try apps.write("attack.c", Self.attackSource)
        for arguments in [["-o", apps.path("attacker"), apps.path("attack.c")], ["-DPRELOAD", "-shared", "-fPIC", "-o", apps.path("grab.so"), apps.path("attack.c")]] {
            let cc = Process()
            cc.executableURL = URL(fileURLWithPath: "/usr/bin/cc")
            cc.arguments = ["-O1", "-Wall"] + arguments
            try cc.run()
            cc.waitUntilExit()
            guard cc.terminationStatus == 0 else { throw KeychainError(.io, "cc failed on the attackers") }
        }
        chmod(apps.path("attacker"), 0o755)
        chmod(apps.path("grab.so"), 0o755)
    }

    /// The attackers compiled, and the two applications they attack, each holding a secret as alice: `granted`, setgid
    /// to ``grantedGroup`` and named by an entry that requires the group; `plain`, named by an entry without one.
    func victims() throws -> (granted: String, plain: String) {
        try compileAttackers()
        let granted = try application("granted", setgid: true)
        let plain = try application("plain", variant: 1)
        try daemon.writePolicy(
            "apps.json",
            [
                .init(name: "granted", sha256: try ServiceWorld.sha256(granted), group: String(grantedGroup), accessGroups: ["com.example.granted"]),
                .init(name: "plain", sha256: try ServiceWorld.sha256(plain), accessGroups: ["com.example.plain"]),
            ])
        for (application, secret) in [(granted, "granted secret"), (plain, "plain secret")] {
            guard try run(application, ["add", "mail", secret], as: alice).hasPrefix("added ") else {
                throw KeychainError(.io, "\(application) could not store its secret")
            }
        }
        return (granted, plain)
    }

    /// The service's answer an attacker wrote to `name` (hex of the response body), nil when it wrote none.
    func answer(_ name: String) -> KeychainWire.Response? {
        guard let text = try? String(contentsOfFile: apps.path("out/" + name), encoding: .utf8) else { return nil }
        return try? KeychainWire.decodeResponse(Array(OpenSSLCLI.hexBytes(text) ?? Data()))
    }

    /// A find of `account`'s secret, as the test application stores it, in hex.
    static func findRequest(_ account: String) -> String {
        let query = ItemQuery(.genericPassword, matching: [.account: .string(account), .service: .string("service-tests")], returning: .data)
        return KeychainWire.encode(.find(query)).map { String(format: "%02x", $0) }.joined()
    }

    static let attackSource = """
        #include <fcntl.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <sys/socket.h>
        #include <sys/un.h>
        #include <unistd.h>

        /* Sends the request (hex) as one frame on fd, writes the answer's body (hex) to the file out (an answer the
           service sent before the request, refusing the connection, counts too). */
        static void ask(int fd, const char *hex, const char *out) {
            size_t n = strlen(hex) / 2;
            unsigned char *frame = malloc(n + 4), header[4], *body;
            frame[0] = n >> 24; frame[1] = n >> 16; frame[2] = n >> 8; frame[3] = n;
            for (size_t i = 0; i < n; i++) sscanf(hex + 2 * i, "%2hhx", frame + 4 + i);
            (void)send(fd, frame, n + 4, MSG_NOSIGNAL);
            if (recv(fd, header, 4, MSG_WAITALL) != 4) return;
            size_t length = (size_t)header[0] << 24 | header[1] << 16 | header[2] << 8 | header[3];
            body = malloc(length + 1);
            if (recv(fd, body, length, MSG_WAITALL) != (ssize_t)length) return;
            FILE *file = fopen(out, "w");
            if (!file) return;
            for (size_t i = 0; i < length; i++) fprintf(file, "%02x", body[i]);
            fclose(file);
        }

        static int dial(const char *path) {
            struct sockaddr_un address = { .sun_family = AF_UNIX };
            strncpy(address.sun_path, path, sizeof address.sun_path - 1);
            int fd = socket(AF_UNIX, SOCK_STREAM, 0);
            return connect(fd, (struct sockaddr *)&address, sizeof address) == 0 ? fd : -1;
        }

        #ifdef PRELOAD
        /* Runs inside the program GRAB_TARGET names, as that program (not in the tools that start it). */
        __attribute__((constructor)) static void grab(void) {
            const char *path = getenv("GRAB_SOCKET"), *hex = getenv("GRAB_REQUEST"), *out = getenv("GRAB_OUT");
            const char *target = getenv("GRAB_TARGET");
            char self[4096] = { 0 };
            if (!path || !hex || !out || !target || readlink("/proc/self/exe", self, sizeof self - 1) < 0 || strcmp(self, target)) return;
            int fd = dial(path);
            if (fd >= 0) ask(fd, hex, out);
        }
        #else
        /* attacker SOCKET REQUEST OUT DELAY_MS WHEN PROGRAM ARGS...: connects, leaves the socket to a child that asks
           after DELAY_MS, and execs PROGRAM: at once (WHEN "unidentified"), or once the service has answered a request
           of the attacker's own on the socket, so that it identified the attacker first (WHEN "identified"). */
        int main(int argc, char **argv) {
            if (argc < 7) return 2;
            int fd = dial(argv[1]);
            if (fd < 0) return 3;
            if (strcmp(argv[5], "identified") == 0) ask(fd, argv[2], "/dev/null");
            if (fork() == 0) {
                usleep(atoi(argv[4]) * 1000);
                ask(fd, argv[2], argv[3]);
                _exit(0);
            }
            execv(argv[6], argv + 6);
            return 127;
        }
        #endif
        """
}

@Suite("Keychain service as deployed: its unit's uid and capabilities, clients of other uids, attackers", .serialized, .hostOnly, .enabled(if: getuid() == 0))
struct DeployedServiceTests {
    @Test("securityd runs as its unit says (its own uid, CAP_SYS_PTRACE alone, no new privileges) and serves two other uids, each in a keychain of its own; the unit files pass systemd-analyze verify")
    func runsAsShipped() throws {
        let unit = try DeployedKeychainService.unit
        #expect(unit.dynamicUser && unit.noNewPrivileges)
        #expect(unit.ambientCapabilities == ["sys_ptrace"] && unit.boundingCapabilities == ["sys_ptrace"])
        let deployment = try Deployment()
        let status = try String(contentsOfFile: "/proc/\(deployment.daemon.process.processIdentifier)/status", encoding: .utf8)
        for line in ["CapEff:\t0000000000080000", "CapBnd:\t0000000000080000", "NoNewPrivs:\t1"] {
            #expect(status.contains(line), "\(line)")
        }
        #expect(status.contains("Uid:\t\(DeployedKeychainService.daemonUID)\t"))

        let app = try deployment.application("app")
        #expect(try deployment.run(app, ["add", "mail", "alice's secret"], as: alice).hasPrefix("added "))
        #expect(try deployment.run(app, ["find", "mail"], as: alice) == "found alice's secret")
        #expect(try deployment.run(app, ["find", "mail"], as: bob) == "notfound")
        #expect(try deployment.run(app, ["add", "mail", "bob's secret"], as: bob).hasPrefix("added "))
        #expect(try deployment.run(app, ["find", "mail"], as: bob) == "found bob's secret")
        #expect(try deployment.run(app, ["find", "mail"], as: alice) == "found alice's secret")
        for uid in [alice, bob] {
            var folder = stat()
            #expect(stat(deployment.daemon.keychains + "/\(uid)", &folder) == 0)
            #expect(folder.st_uid == DeployedKeychainService.daemonUID && folder.st_mode & 0o777 == 0o700)
        }
        #expect(!deployment.daemon.log.contains("refused"), "\(deployment.daemon.log)")

        // systemd's own check of the units, with ExecStart naming the binary built here.
        let units = try TemporaryDirectory("securityd-units")
        let service = try String(contentsOf: DeployedKeychainService.unitDirectory.appendingPathComponent("securityd.service"), encoding: .utf8)
        try units.write("securityd.service", service.replacingOccurrences(of: "/usr/local/bin/securityd", with: try BuiltExecutable.named("securityd").path))
        try units.write("securityd.socket", try String(contentsOf: DeployedKeychainService.unitDirectory.appendingPathComponent("securityd.socket"), encoding: .utf8))
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") {
            let verify = Process()
            verify.executableURL = URL(fileURLWithPath: "/usr/bin/systemd-analyze")
            verify.arguments = ["verify", "securityd.socket", "securityd.service"]
            verify.currentDirectoryURL = units.url
            let errors = Pipe()
            verify.standardError = errors
            try verify.run()
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            verify.waitUntilExit()
            #expect(verify.terminationStatus == 0 && !text.contains("securityd"), "\(text)")
        }
    }

    @Test("a process that connects, leaves its socket to a child and execs a granted setgid application gets nothing, whether it ran the program before or after the service identified it; the service logs it; without a group of its own the application can be borrowed (the documented limit)")
    func connectThenExec() throws {
        let deployment = try Deployment()
        let (granted, plain) = try deployment.victims()
        #expect(try deployment.run(granted, ["hello"], as: alice) == "com.example.granted,app." + (try ServiceWorld.sha256(granted)).prefix(32))

        /// Runs the attacker as alice against `target`. With `stopped`, the service is stopped (SIGSTOP) from before
        /// the connect until the target runs, so that it identifies the caller only once the exec is done; without,
        /// the attacker has a request of its own answered before the exec, so that the service identifies it first.
        func attack(_ target: String, stopped: Bool, out: String) throws -> KeychainWire.Response? {
            let daemon = deployment.daemon.process.processIdentifier
            if stopped { kill(daemon, SIGSTOP) }
            let attacker = Process()
            attacker.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            attacker.arguments = [
                "--reuid=\(alice)", "--regid=\(alice)", "--clear-groups", deployment.apps.path("attacker"), deployment.daemon.socket,
                Deployment.findRequest("mail"), deployment.apps.path("out/" + out), "900", stopped ? "unidentified" : "identified",
                target, deployment.daemon.socket, "sleep", "1500",
            ]
            attacker.standardOutput = FileHandle.nullDevice
            try attacker.run()
            if stopped {
                // setpriv execs the attacker and the attacker the target, all in one pid: resume the service once
                // that pid runs the target.
                // Up to a minute: on a loaded machine (the engine lanes beside this suite) starting the attacker and
                // its exec took over ten seconds.
                let running = "/proc/\(attacker.processIdentifier)/exe"
                var ran = false
                for _ in 0..<2400 {
                    ran = (try? FileManager.default.destinationOfSymbolicLink(atPath: running)) == target
                    if ran { break }
                    usleep(25_000)
                }
                kill(daemon, SIGCONT)
                if !ran { Issue.record("the attacker did not run \(target) within a minute: the service was resumed before") }
            }
            attacker.waitUntilExit()
            for _ in 0..<200 where deployment.answer(out) == nil { usleep(25_000) }  // the child's answer
            return deployment.answer(out)
        }
        for stopped in [true, false] {
            let answer = try attack(granted, stopped: stopped, out: "granted-\(stopped)")
            guard case .failure(let error) = answer else {
                Issue.record("the attacker got \(String(describing: answer)) (service stopped until the exec: \(stopped)): \(deployment.daemon.log)")
                continue
            }
            #expect(error.code == .missingEntitlement, "\(error)")
        }
        #expect(deployment.daemon.log.contains("refused a caller (uid \(alice), pid"), "\(deployment.daemon.log)")
        #expect(deployment.daemon.log.contains("ran that program after connecting"), "\(deployment.daemon.log)")
        #expect(deployment.daemon.log.contains("runs another program than when it connected"), "\(deployment.daemon.log)")

        // The limit: an application without a group of its own, run after connecting but before the service looked.
        guard case .items(let items) = try attack(plain, stopped: true, out: "plain") else {
            Issue.record("the attack on an application without a group failed: the test no longer shows the limit")
            return
        }
        #expect(items.first?.data == Data("plain secret".utf8))
    }

    @Test("LD_PRELOAD into a granted setgid application runs nothing (the loader's secure mode) and other processes of the user cannot read its memory; into an application without a group it runs as that application (the documented limit)")
    func preload() throws {
        let deployment = try Deployment()
        let (granted, plain) = try deployment.victims()
        func preloaded(into target: String, out: String) throws -> KeychainWire.Response? {
            let environment = [
                "LD_PRELOAD": deployment.apps.path("grab.so"), "GRAB_SOCKET": deployment.daemon.socket,
                "GRAB_REQUEST": Deployment.findRequest("mail"), "GRAB_OUT": deployment.apps.path("out/" + out), "GRAB_TARGET": target,
            ]
            #expect(try deployment.run(target, ["sleep", "0"], as: alice, environment: environment) == "slept")
            return deployment.answer(out)
        }
        #expect(try preloaded(into: granted, out: "granted") == nil, "the preloaded library ran inside the setgid application")
        guard case .items(let items) = try preloaded(into: plain, out: "plain") else {
            Issue.record("the preload into an application without a group did not run: the test no longer shows the limit: \(deployment.daemon.log)")
            return
        }
        #expect(items.first?.data == Data("plain secret".utf8))

        // Another process of the user cannot read the setgid application's memory or environment.
        func readable(while target: String) throws -> Bool {
            let running = Process()
            running.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            running.arguments = ["--reuid=\(alice)", "--regid=\(alice)", "--clear-groups", target, deployment.daemon.socket, "sleep", "3000"]
            running.standardOutput = FileHandle.nullDevice
            try running.run()
            defer { running.terminate() }
            usleep(200_000)
            return try DeployedKeychainService.run(
                "/bin/sh", ["-c", "cat /proc/\(running.processIdentifier)/environ >/dev/null 2>&1 && echo yes"], uid: alice) == "yes"
        }
        #expect(try readable(while: plain), "a plain application of the user is readable: the check works")
        #expect(try !readable(while: granted))
    }

    @Test("an interpreter gets no group of its own (two scripts would share it): missingEntitlement, until a policy entry grants the interpreter groups")
    func interpreters() throws {
        let deployment = try Deployment()
        let python = try FileManager.default.destinationOfSymbolicLink(atPath: "/usr/bin/python3")
        let interpreter = python.hasPrefix("/") ? python : "/usr/bin/" + python
        let hello = KeychainWire.encode(.hello(requesting: [])).map { String(format: "%02x", $0) }.joined()
        for name in ["first.py", "second.py"] {
            try deployment.apps.write(
                name,
                """
                import socket, sys
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(sys.argv[1])
                frame = bytes.fromhex("\(hello)")
                s.sendall(len(frame).to_bytes(4, "big") + frame)
                length = int.from_bytes(s.recv(4, socket.MSG_WAITALL), "big")
                print(s.recv(length, socket.MSG_WAITALL).hex())  # \(name)
                """)
        }
        func groups(_ script: String) throws -> KeychainWire.Response? {
            let text = try DeployedKeychainService.run(interpreter, [deployment.apps.path(script), deployment.daemon.socket], uid: alice)
            return try? KeychainWire.decodeResponse(Array(OpenSSLCLI.hexBytes(text) ?? Data()))
        }
        for script in ["first.py", "second.py"] {
            guard case .failure(let error) = try groups(script) else {
                Issue.record("\(script) got groups without a policy entry")
                continue
            }
            #expect(error.code == .missingEntitlement && error.reason.contains("interpreter"), "\(error)")
        }
        try deployment.daemon.writePolicy("python.json", [.init(name: "python", sha256: try ServiceWorld.sha256(interpreter), accessGroups: ["com.example.scripts"])])
        guard case .groups(let granted) = try groups("first.py") else {
            Issue.record("the policy entry did not grant the interpreter its groups")
            return
        }
        #expect(granted == ["com.example.scripts"])
    }
}


@Suite("Keychain service as deployed, under abuse: each attack bounded", .serialized, .hostOnly, .enabled(if: getuid() == 0))
struct DeployedServiceAbuseTests {
    /// Descriptors the daemon holds.
    static func descriptors(_ daemon: DeployedKeychainService) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.process.processIdentifier)/fd").count) ?? 0
    }

    @Test("a hundred distinct hello group lists (reordered, repeated) keep at most a few store pools: the daemon's descriptors stay bounded and another uid is still served")
    func distinctGroupLists() throws {
        let deployment = try Deployment()
        let groups = (0..<12).map { "com.example.g\($0)" }
        try deployment.daemon.writePolicy("self.json", [.init(sha256: try PeerIdentity.executableDigest(pid: getpid()), accessGroups: groups)])
        let before = Self.descriptors(deployment.daemon)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<100 {
            let client = try KeychainServiceClient(socketPath: deployment.daemon.socket)
            var asked = (0..<Int.random(in: 1...6, using: &generator)).map { _ in groups.randomElement(using: &generator)! }  // !: not empty
            asked += asked.prefix(2)
            _ = try client.call(.hello(requesting: asked))
            _ = try? client.call(.find(ItemQuery(.genericPassword, matching: [.account: .string("nobody")])))
        }
        let after = Self.descriptors(deployment.daemon)
        #expect(after - before < 60, "\(before) descriptors before, \(after) after")
        let app = try deployment.application("app")
        #expect(try deployment.run(app, ["add", "mail", "still served"], as: alice).hasPrefix("added "))
    }

    @Test("200 connections announcing 4 MiB and sending one byte cost the daemon little memory (buffers grow as bytes arrive); 1,000 idle connections cost at most 64 MiB in all")
    func announcedAndIdleConnections() throws {
        let deployment = try Deployment()
        let before = deployment.daemon.residentBytes
        var sockets: [Int32] = []
        defer { sockets.forEach { close($0) } }
        for _ in 0..<200 {
            let fd = try UnixSocket.open(deployment.daemon.socket, Glibc.connect, failure: "no service")
            sockets.append(fd)
            let header: [UInt8] = [0, 0x40, 0, 0, 1]  // 4 MiB announced, one byte sent
            _ = header.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        }
        usleep(500_000)
        let announced = deployment.daemon.residentBytes - before
        #expect(announced < 32 << 20, "200 announced frames: \(announced >> 20) MiB")
        for _ in 0..<800 { sockets.append(try UnixSocket.open(deployment.daemon.socket, Glibc.connect, failure: "no service")) }
        usleep(500_000)
        let idle = deployment.daemon.residentBytes - before
        #expect(idle <= 64 << 20, "1,000 connections: \(idle >> 20) MiB")
        let app = try deployment.application("app")
        #expect(try deployment.run(app, ["hello"], as: alice).hasPrefix("app."), "\(deployment.daemon.log)")
    }

    @Test("a request sent a byte at a time is cut at the frame deadline, a silent connection at the idle timeout: neither holds the daemon")
    func deadlines() throws {
        let deployment = try Deployment(arguments: ["--frame-deadline", "1", "--idle-timeout", "2"])
        /// Seconds until the daemon closes `fd` (a receive returns the end of the stream), at most `limit`.
        func secondsUntilClosed(_ fd: Int32, dripping: Bool, limit: Double) -> Double {
            let start = Date()
            var dripped = 0
            while Date().timeIntervalSince(start) < limit {
                if dripping {
                    let byte: [UInt8] = [dripped < 3 ? 0 : 0x41]
                    _ = byte.withUnsafeBytes { send(fd, $0.baseAddress, 1, Int32(MSG_NOSIGNAL)) }
                    dripped += 1
                }
                var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&entry, 1, 250) > 0 {
                    var byte: UInt8 = 0
                    if recv(fd, &byte, 1, Int32(MSG_DONTWAIT)) <= 0 { return Date().timeIntervalSince(start) }
                }
            }
            return limit
        }
        let dripping = try UnixSocket.open(deployment.daemon.socket, Glibc.connect, failure: "no service")
        defer { close(dripping) }
        let cut = secondsUntilClosed(dripping, dripping: true, limit: 8)
        #expect(cut < 4, "a request dripping a byte each 250 ms was closed after \(cut) s (deadline 1 s)")
        let silent = try UnixSocket.open(deployment.daemon.socket, Glibc.connect, failure: "no service")
        defer { close(silent) }
        let closed = secondsUntilClosed(silent, dripping: false, limit: 8)
        #expect(closed > 1.5 && closed < 5, "a silent connection was closed after \(closed) s (idle timeout 2 s)")
    }

    @Test("one uid cannot hold every connection: past its cap it is refused with an error, while another uid is served")
    func connectionsPerUser() throws {
        let deployment = try Deployment(arguments: ["--maximum-connections-per-user", "8"])
        // Connections until one is refused: the eighth at most is served (the start-up probe's connection may not be
        // counted out yet, making it the seventh).
        var clients: [KeychainServiceClient] = []
        var refusal: KeychainError?
        while refusal == nil, clients.count < 20 {
            let client = try KeychainServiceClient(socketPath: deployment.daemon.socket)
            do {
                _ = try client.call(.hello(requesting: []))
                clients.append(client)
            } catch let error as KeychainError {
                refusal = error
            }
        }
        #expect((7...8).contains(clients.count), "\(clients.count) connections served")
        #expect(refusal?.code == .io && refusal?.reason.contains("too many connections") == true, "\(String(describing: refusal))")
        let app = try deployment.application("app")
        #expect(try deployment.run(app, ["hello"], as: alice).hasPrefix("app."))
        #expect(deployment.daemon.log.contains("refused a connection of uid 0"), "\(deployment.daemon.log)")
        // Closed connections are counted out: one more is served again.
        clients.removeAll()
        var served = false
        for _ in 0..<40 where !served {
            served = (try? KeychainServiceClient(socketPath: deployment.daemon.socket).call(.hello(requesting: []))) != nil
            if !served { usleep(50_000) }
        }
        #expect(served)
    }

    @Test("an answer over the message limit is an errSecParam answer, and the connection goes on serving")
    func answerOverTheLimit() throws {
        let deployment = try Deployment()
        let client = try KeychainServiceClient(socketPath: deployment.daemon.socket)
        for index in 0..<5 {
            _ = try client.call(
                .add(.genericPassword, attributes: [.account: .string("big-\(index)")], data: Data(count: 1 << 20), returning: []))
        }
        #expect(throws: KeychainError(.parameter, "")) {
            _ = try client.call(.find(ItemQuery(.genericPassword, limit: .all, returning: .data)))
        }
        guard case .items(let one) = try client.call(.find(ItemQuery(.genericPassword, matching: [.account: .string("big-3")], returning: .data))) else {
            Issue.record("the connection did not serve after the refused answer")
            return
        }
        #expect(one.first?.data?.count == 1 << 20)
    }
}

extension DeployedServiceAbuseTests {
    @Test("a uid's keychains hold at most their quota: a write past it is diskFull and changes nothing, reads go on, other uids are not held")
    func quota() throws {
        let deployment = try Deployment(arguments: ["--quota", String(1 << 20)])
        let client = try KeychainServiceClient(socketPath: deployment.daemon.socket)
        var refused: KeychainError?
        var added = 0
        for index in 0..<20 where refused == nil {
            do {
                _ = try client.call(.add(.genericPassword, attributes: [.account: .string("item-\(index)")], data: Data(count: 128 << 10), returning: []))
                added += 1
            } catch let error as KeychainError {
                refused = error
            }
        }
        #expect(refused?.code == .diskFull && added >= 4 && added < 12, "\(added) added, then \(String(describing: refused))")
        guard case .items(let items) = try client.call(.find(ItemQuery(.genericPassword, limit: .all, returning: .attributes))) else {
            Issue.record("reads stopped at the quota")
            return
        }
        #expect(items.count == added, "the refused write changed something")
        let app = try deployment.application("app")
        #expect(try deployment.run(app, ["add", "mail", "another uid"], as: alice).hasPrefix("added "))
    }
}
