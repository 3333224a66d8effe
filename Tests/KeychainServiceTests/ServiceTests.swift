import KeychainWire
import SecurityBase
import CryptoContract
import Foundation
import Keychain
import KeychainItems
import KeychainService
import TestVectors
import Synchronization
import Testing

@Suite("Keychain service: callers identified by the kernel, groups by policy", .serialized, .hostOnly)
struct ServiceTests {
    @Test("an unknown application's group is derived from its binary's SHA-256 (sha256sum's): a modified copy is another application, an exact copy elsewhere the same")
    func identity() throws {
        let world = try ServiceWorld()
        let a = try world.application("app-a")
        let copy = try world.application("app-a-copy")
        let b = try world.application("app-b", modified: true)
        let expectedA = "app." + (try ServiceWorld.sha256(a)).prefix(32)
        #expect(try world.run(a, ["hello"]) == expectedA)
        #expect(try world.run(copy, ["hello"]) == expectedA)
        let groupB = try world.run(b, ["hello"])
        #expect(groupB == "app." + (try ServiceWorld.sha256(b)).prefix(32))
        #expect(groupB != expectedA)
    }

    @Test("two applications cannot see each other's items by query, by persistent reference, or by naming the other's group")
    func isolation() throws {
        let world = try ServiceWorld()
        let a = try world.application("app-a")
        let b = try world.application("app-b", modified: true)
        let added = try world.run(a, ["add", "alice", "secret-a"])
        #expect(added.hasPrefix("added "), "\(added)")
        let reference = String(added.dropFirst("added ".count))
        #expect(try world.run(a, ["find", "alice"]) == "found secret-a")
        #expect(try world.run(a, ["find-ref", reference]) == "found secret-a")

        #expect(try world.run(b, ["find", "alice"]) == "notfound")
        #expect(try world.run(b, ["find-ref", reference]) == "notfound")
        let groupA = try world.run(a, ["hello"])
        #expect(try world.run(b, ["add", "alice", "secret-b", groupA]) == "error missingEntitlement")
        // b's own item of the same name lives in b's group; a still reads its own.
        #expect(try world.run(b, ["add", "alice", "secret-b"]).hasPrefix("added "))
        #expect(try world.run(b, ["find", "alice"]) == "found secret-b")
        #expect(try world.run(a, ["find", "alice"]) == "found secret-a")
    }

    @Test("a policy entry grants an application groups by its SHA-256 (and path when it names one)")
    func policy() throws {
        let world = try ServiceWorld()
        let a = try world.application("app-a")
        let b = try world.application("app-b", modified: true)
        _ = try world.run(a, ["add", "shared", "from-a", "com.example.shared"])  // not a's group yet
        #expect(try world.run(a, ["find", "shared"]) == "notfound")
        let hashA = try ServiceWorld.sha256(a)
        let hashB = try ServiceWorld.sha256(b)
        try world.writePolicy(
            "apps.json",
            [
                .init(name: "A", sha256: hashA, accessGroups: ["com.example.a", "com.example.shared"]),
                .init(name: "B", path: b, sha256: hashB, accessGroups: ["com.example.shared"]),
            ])
        // The entry's groups first (adds go to the first), then the derived group: what the application stored before
        // it had an entry stays its own.
        #expect(try world.run(a, ["hello"]) == "com.example.a,com.example.shared,app." + hashA.prefix(32))
        #expect(try world.run(b, ["hello"]) == "com.example.shared,app." + hashB.prefix(32))
        #expect(try world.run(a, ["add", "shared", "from-a", "com.example.shared"]).hasPrefix("added "))
        #expect(try world.run(b, ["find", "shared"]) == "found from-a")
        // The entry names b's path: the same binary elsewhere does not get the grant.
        let moved = try world.application("app-b-moved", modified: true)
        #expect(try world.run(moved, ["hello"]) == "app." + hashB.prefix(32))
    }

    @Test("an item's access control list is enforced against the caller the kernel names: an application it does not trust is refused the secret and the delete, attributes stay shared")
    func accessControlLists() throws {
        let world = try ServiceWorld()
        let a = try world.application("app-a")
        let b = try world.application("app-b", modified: true)
        let hashA = try ServiceWorld.sha256(a)
        let hashB = try ServiceWorld.sha256(b)
        try world.writePolicy(
            "apps.json",
            [
                .init(name: "A", sha256: hashA, accessGroups: ["com.example.shared"]),
                .init(name: "B", sha256: hashB, accessGroups: ["com.example.shared"]),
                .init(name: "tests", sha256: try ItemAccess.Application.current.sha256, accessGroups: ["com.example.shared"]),
            ])
        #expect(try world.run(a, ["add-acl", "only-a", "secret-a", "com.example.shared", hashA]) == "added")
        #expect(try world.run(a, ["add-acl", "both", "secret-ab", "com.example.shared", hashA + "," + hashB]) == "added")
        // b shares the group, so it finds the item, but the list trusts a alone with its secret and its deletion.
        #expect(try world.run(a, ["find", "only-a"]) == "found secret-a")
        #expect(try world.run(b, ["find", "only-a"]) == "error interactionNotAllowed")
        #expect(try world.run(b, ["delete", "only-a"]) == "error interactionNotAllowed")
        #expect(try world.run(a, ["find", "only-a"]) == "found secret-a", "the refused delete changed nothing")
        #expect(try world.run(b, ["find", "both"]) == "found secret-ab")
        // The service checks the peer, not this process: the test bundle's own store, through the same service,
        // is neither a nor b.
        let store = try KeychainStore(service: world.socket)
        #expect(throws: KeychainError(.interactionNotAllowed, "")) {
            try store.find(ItemQuery(.genericPassword, matching: [.account: .string("only-a"), .service: .string("service-tests")], returning: .data))
        }
        #expect(try world.run(a, ["delete", "only-a"]) == "deleted")
        #expect(try world.run(a, ["find", "only-a"]) == "notfound")
    }

    @Test("a password-locked keychain in the service: its key held for every process of the uid (one unlocks, another reads), locked for all at once, wrong passwords authFailed, the password set only on an empty keychain, no secret in its files")
    func passwordLockedKeychain() throws {
        let world = try ServiceWorld()
        let a = try world.application("app-a")
        let b = try world.application("app-b", modified: true)
        #expect(try world.run(a, ["lock-status"]) == "no password")
        #expect(try world.run(a, ["add", "alice", "before"]).hasPrefix("added "))
        #expect(try world.run(a, ["set-password", "first password"]) == "error duplicateItem", "the keychain holds an item")
        #expect(try world.run(a, ["delete", "alice"]) == "deleted")
        #expect(try world.run(a, ["set-password", "first password"]) == "unlocked")
        #expect(try world.run(a, ["set-password", "again"]) == "error duplicateItem")
        // Another application of the uid, and later processes, see the state the service holds.
        #expect(try world.run(b, ["lock-status"]) == "unlocked")
        #expect(try world.run(a, ["add", "alice", "secret-after"]).hasPrefix("added "))
        #expect(try world.run(a, ["find", "alice"]) == "found secret-after")
        #expect(try world.run(b, ["lock"]) == "locked")
        #expect(try world.run(a, ["find", "alice"]) == "error interactionNotAllowed")
        #expect(try world.run(a, ["add", "bob", "refused"]) == "error interactionNotAllowed")
        #expect(try world.run(a, ["unlock", "wrong"]) == "error authFailed")
        #expect(try world.run(b, ["unlock", "first password"]) == "unlocked")
        #expect(try world.run(a, ["find", "alice"]) == "found secret-after")
        #expect(try world.run(a, ["change-password", "first password", "second password"]) == "unlocked")
        #expect(try world.run(a, ["lock"]) == "locked")
        #expect(try world.run(a, ["unlock", "first password"]) == "error authFailed")
        #expect(try world.run(a, ["unlock", "second password"]) == "unlocked")
        #expect(try world.run(a, ["find", "alice"]) == "found secret-after")

        // The idiomatic API through the service, as this process's own store.
        let store = try KeychainStore(service: world.socket)
        #expect(store.isPasswordLocked && !store.isLocked)
        try store.lock()
        #expect(store.isLocked)
        #expect(try world.run(a, ["find", "alice"]) == "error interactionNotAllowed")
        #expect(throws: KeychainError(.authFailed, "")) { try store.unlock(password: Data("wrong".utf8)) }
        try store.unlock(password: Data("second password".utf8))
        #expect(!store.isLocked)

        // User presence through the service: the service checks the proof the request carries (the keychain's
        // password, or its own record of the unlock just made, within the request's reuse).
        var guarded: ItemAttributes = [.account: .string("guarded"), .service: .string("service-tests")]
        guarded[.accessControl] = .data(try ItemAccessControl(protection: .whenUnlocked, flags: ItemAccessControl.Flag.userPresence).encoded())
        try store.add(.genericPassword, attributes: guarded, data: Data("presence".utf8))
        func read(_ authentication: ItemAuthentication?) throws -> Data? {
            try store.find(ItemQuery(.genericPassword, matching: [.account: .string("guarded")], returning: .data, authentication: authentication)).first?.data
        }
        #expect(try read(ItemAuthentication(reuse: .seconds(60))) == Data("presence".utf8))
        #expect(throws: KeychainError(.interactionNotAllowed, "")) { _ = try read(nil) }
        #expect(throws: KeychainError(.interactionNotAllowed, "")) { _ = try read(ItemAuthentication(interaction: .fail)) }
        #expect(throws: KeychainError(.itemNotFound, "")) { _ = try read(ItemAuthentication(interaction: .skip)) }
        #expect(throws: KeychainError(.authFailed, "")) { _ = try read(ItemAuthentication(password: SecretBytes(Array("wrong".utf8)))) }
        #expect(try read(ItemAuthentication(password: SecretBytes(Array("second password".utf8)))) == Data("presence".utf8))
        #expect(throws: KeychainError(.authFailed, "")) { try store.verifyPassword(Data("wrong".utf8)) }
        try store.verifyPassword(Data("second password".utf8))
        #expect(try store.delete(ItemQuery(.genericPassword, matching: [.account: .string("guarded")])) == 1)

        // The files hold no secret in the clear.
        let files = try FileManager.default.contentsOfDirectory(atPath: world.keychains + "/\(getuid())")
        for name in files {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: world.keychains + "/\(getuid())/" + name))
            #expect(bytes.range(of: Data("secret-after".utf8)) == nil, "\(name)")
        }
    }

    @Test("callers of different uids never share a keychain, even running the same binary", .enabled(if: getuid() == 0))
    func uids() throws {
        let world = try ServiceWorld()
        let a = try world.application("app-a")
        #expect(try world.run(a, ["add", "alice", "root-secret"]).hasPrefix("added "))
        #expect(try world.run(a, ["hello"], asNobody: true) == (try world.run(a, ["hello"])))
        #expect(try world.run(a, ["find", "alice"], asNobody: true) == "notfound")
        #expect(try world.run(a, ["add", "alice", "nobody-secret"], asNobody: true).hasPrefix("added "))
        #expect(try world.run(a, ["find", "alice"], asNobody: true) == "found nobody-secret")
        #expect(try world.run(a, ["find", "alice"]) == "found root-secret")
        #expect(FileManager.default.fileExists(atPath: world.keychains + "/65534/keychain.db"))
        var status = stat()
        #expect(stat(world.keychains + "/65534", &status) == 0 && status.st_mode & 0o777 == 0o700)
    }

    @Test("malformed, oversized and cut messages get an error or a closed connection and change nothing")
    func badMessages() throws {
        let world = try ServiceWorld()
        let a = try world.application("app-a")
        _ = try world.run(a, ["add", "alice", "secret-a"])
        func connect() throws -> Int32 {
            let fd = try UnixSocket.open(world.socket, Glibc.connect, failure: "no service")
            KeychainFraming.setTimeout(.seconds(10), on: fd)
            return fd
        }
        // Garbage in a well-formed frame: an errSecParam answer, and the connection still serves.
        let fd = try connect()
        defer { close(fd) }
        try KeychainFraming.send([KeychainWire.version, 3, 0xFF, 0xFF], on: fd)
        var answers = FrameReader(fd: fd)
        guard case .failure(let error) = try KeychainWire.decodeResponse(try #require(try answers.next())) else {
            Issue.record("garbage was answered with a result")
            return
        }
        #expect(error.code == .parameter)
        try KeychainFraming.send(KeychainWire.encode(.hello(requesting: [])), on: fd)
        guard case .groups = try KeychainWire.decodeResponse(try #require(try answers.next())) else {
            Issue.record("the connection did not serve after a malformed message")
            return
        }
        // A length over the limit: an errSecParam answer, then the connection is closed.
        let oversized = try connect()
        defer { close(oversized) }
        _ = [UInt8](arrayLiteral: 0x7F, 0xFF, 0xFF, 0xFF).withUnsafeBytes { send(oversized, $0.baseAddress, 4, 0) }
        var oversizedAnswers = FrameReader(fd: oversized)
        guard case .failure(let tooLarge) = try KeychainWire.decodeResponse(try #require(try oversizedAnswers.next())) else {
            Issue.record("an oversized message was answered with a result")
            return
        }
        #expect(tooLarge.code == .parameter)
        #expect(try oversizedAnswers.next() == nil, "the connection is closed after an oversized length")
        // A request cut mid-body (a client gone mid-request): nothing is added.
        let cut = try connect()
        let add = KeychainWire.encode(.add(.genericPassword, attributes: [.account: .string("bob")], data: Data("x".utf8), returning: []))
        let frame = [UInt8(0), 0, 0, UInt8(add.count)] + add
        _ = frame.withUnsafeBytes { send(cut, $0.baseAddress, frame.count - 3, 0) }
        close(cut)
        usleep(100_000)
        #expect(try world.run(a, ["find", "bob"]) == "notfound")
        #expect(try world.run(a, ["find", "alice"]) == "found secret-a")
    }

    @Test("64 clients at once: every add acknowledged is found")
    func concurrentClients() async throws {
        let world = try ServiceWorld()
        let failures = Mutex(0)
        // All 64 connections open before any request: the service serves them at once.
        let clients = try (0..<64).map { _ in try KeychainServiceClient(socketPath: world.socket) }
        // A thread of its own per client (their calls block on the socket), awaited by the test rather than waited
        // for on a cooperative thread: none of the pool's threads (two here) is held for the seconds this takes under
        // the full suite, while other suites' tasks need them.
        try await onOwnThread {
            let done = DispatchGroup()
            for (index, client) in clients.enumerated() {
                done.enter()
                Thread.detachNewThread {
                    defer { done.leave() }
                    do {
                        let attributes: ItemAttributes = [.account: .string("client-\(index)"), .service: .string("concurrent")]
                        _ = try client.call(.add(.genericPassword, attributes: attributes, data: Data("secret-\(index)".utf8), returning: []))
                        guard case .items(let items) = try client.call(.find(ItemQuery(.genericPassword, matching: attributes, returning: .data))),
                            items.first?.data == Data("secret-\(index)".utf8)
                        else { throw KeychainError(.itemNotFound, "client \(index)") }
                    } catch {
                        failures.withLock { $0 += 1 }
                    }
                }
            }
            done.wait()
        }
        #expect(failures.withLock { $0 } == 0)
        let client = try KeychainServiceClient(socketPath: world.socket)
        guard case .items(let all) = try client.call(.find(ItemQuery(.genericPassword, matching: [.service: .string("concurrent")], limit: .all))) else {
            Issue.record("no answer")
            return
        }
        #expect(all.count == 64)
    }

    @Test("KeychainStore in service mode: the service's groups, narrowed on request; a group not granted is missingEntitlement; calls only an embedded keychain has are unimplemented")
    func storeServiceMode() throws {
        let world = try ServiceWorld()
        let store = try KeychainStore(service: world.socket)
        #expect(store.remote != nil && store.accessGroups.count == 1 && store.accessGroups[0].hasPrefix("app."))
        try store.setPassword("pw", account: "alice", service: "mail")
        #expect(try store.password(account: "alice", service: "mail") == "pw")
        #expect(try store.update(ItemQuery(.genericPassword, matching: [.account: .string("alice")]), attributes: [.label: .string("L")]) == 1)
        #expect(try store.find(ItemQuery(.genericPassword, matching: [.label: .string("L")], returning: .attributes)).count == 1)
        #expect(try store.delete(ItemQuery(.genericPassword, limit: .all)) == 1)
        #expect(throws: KeychainError(.missingEntitlement, "")) { _ = try KeychainStore(service: world.socket, accessGroups: ["com.example.other"]) }
        #expect(throws: KeychainError(.missingEntitlement, "")) {
            try store.add(.genericPassword, attributes: [.account: .string("x"), .accessGroup: .string("com.example.other")])
        }
        #expect(throws: KeychainError(.unimplemented, "")) { _ = try store.backup(to: world.directory.url.appendingPathComponent("b")) }
        #expect(throws: KeychainError(.io, "")) { _ = try KeychainStore(service: world.directory.path("nothing.sock")) }

        // Narrowing: granted two groups by policy, a store asking for the second acts in it alone.
        let groups = ["com.example.one", "com.example.two"]
        let binary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        try world.writePolicy("self.json", [.init(sha256: try ServiceWorld.sha256(binary), accessGroups: groups)])
        #expect(try KeychainStore(service: world.socket).accessGroups == groups + [store.accessGroups[0]])
        let second = try KeychainStore(service: world.socket, accessGroups: ["com.example.two", "com.example.three"])
        #expect(second.accessGroups == ["com.example.two"])
        let added = try second.add(.genericPassword, attributes: [.account: .string("narrow")], returning: .attributes)
        #expect(added.attributes?[.accessGroup] == .string("com.example.two"))
        let first = try KeychainStore(service: world.socket, accessGroups: ["com.example.one"])
        #expect(throws: KeychainError(.itemNotFound, "")) {
            _ = try first.find(ItemQuery(.genericPassword, matching: [.account: .string("narrow")]))
        }
    }

    @Test("the socket's directory must be the service's and closed to others; a policy directory others can write is not used")
    func directories() throws {
        let directory = try TemporaryDirectory("keychain-service-directories")
        let open = directory.path("open")
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: true)
        chmod(open, 0o777)
        #expect(throws: KeychainError(.io, "")) {
            _ = try KeychainService(.init(socketPath: open + "/s.sock", directory: directory.path("keychains"), policyDirectories: []))
        }
        if getuid() == 0 {
            chmod(open, 0o755)
            chown(open, 61_001, 61_001)
            #expect(throws: KeychainError(.io, "")) {
                _ = try KeychainService(.init(socketPath: open + "/s.sock", directory: directory.path("keychains"), policyDirectories: []))
            }
        }
        // A system policy directory must be root's.
        guard getuid() == 0 else { return }
        let policy = directory.path("policy")
        try FileManager.default.createDirectory(atPath: policy, withIntermediateDirectories: true)
        try JSONEncoder().encode([ApplicationPolicy.Entry(sha256: try PeerIdentity.executableDigest(pid: getpid()), accessGroups: ["com.example.policy"])])
            .write(to: URL(fileURLWithPath: policy + "/self.json"))
        chmod(policy + "/self.json", 0o644)
        chmod(policy, 0o775)
        let service = try KeychainService(.init(socketPath: directory.path("s.sock"), directory: directory.path("keychains"), policyDirectories: [policy]))
        service.start()
        defer { service.stop() }
        #expect(try !KeychainStore(service: directory.path("s.sock")).accessGroups.contains("com.example.policy"), "a group-writable policy was used")
        chmod(policy, 0o755)
        #expect(try KeychainStore(service: directory.path("s.sock")).accessGroups.first == "com.example.policy")
    }

    @Test("the default keychain is the service's when SECURITYSERVICES_KEYCHAIN_SERVICE names its socket, embedded when it is empty")
    func defaultsFollowTheEnvironment() throws {
        let world = try ServiceWorld()
        let a = try world.application("app-a")
        let viaService = try world.run(
            a, ["default-add", "alice", "from-defaults"], environment: ["SECURITYSERVICES_KEYCHAIN_SERVICE": world.socket])
        #expect(viaService == "service \(try world.run(a, ["hello"]))\nadded", "\(viaService)")
        #expect(try world.run(a, ["find", "alice"]) == "found from-defaults")
        let keychain = world.directory.path("embedded.db")
        let embedded = try world.run(
            a, ["default-add", "bob", "local"],
            environment: ["SECURITYSERVICES_KEYCHAIN_SERVICE": "", "SECURITYSERVICES_KEYCHAIN": keychain])
        #expect(embedded == "embedded \(keychain)\nadded", "\(embedded)")
        #expect(try world.run(a, ["find", "bob"]) == "notfound")
    }

    @Test("connections beyond the limit are closed at accept; the ones within it are served")
    func connectionLimit() throws {
        let directory = try TemporaryDirectory("keychain-service-limit")
        let socket = directory.path("s.sock")
        let service = try KeychainService(
            .init(socketPath: socket, directory: directory.path("keychains"), policyDirectories: [], maximumConnections: 2))
        service.start()
        defer { service.stop() }
        let first = try KeychainServiceClient(socketPath: socket)
        let second = try KeychainServiceClient(socketPath: socket)
        _ = try first.call(.hello(requesting: []))
        _ = try second.call(.hello(requesting: []))
        let third = try KeychainServiceClient(socketPath: socket)
        #expect(throws: KeychainError(.io, "")) { _ = try third.call(.hello(requesting: [])) }
        _ = try first.call(.hello(requesting: []))
    }
}
