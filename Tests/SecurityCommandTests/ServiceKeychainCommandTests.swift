import Foundation
import TestVectors
import Testing

/// `security` against a deployed keychain service (``DeployedKeychainService``: its unit's uid and capabilities),
/// each step in a process of its own under a client uid, as a CI script runs it.
@Suite("security with the keychain service: locks that hold across processes", .serialized, .hostOnly, .enabled(if: getuid() == 0))
struct ServiceKeychainCommandTests {
    static let user: UInt32 = 61_003

    /// A home for the user, a copy of `security` it can run, and the service.
    final class World {
        let daemon: DeployedKeychainService
        let home: TemporaryDirectory
        let security: String

        init() throws {
            daemon = try DeployedKeychainService()
            home = try TemporaryDirectory("security-service-home")
            chown(home.url.path, ServiceKeychainCommandTests.user, ServiceKeychainCommandTests.user)
            security = home.path("security")
            try BuiltExecutable.install(try Data(contentsOf: try Sandbox.binary()), at: security)
        }

        /// Runs `security arguments` as the user, `input` on standard input.
        func run(_ arguments: String..., input: String = "") throws -> Sandbox.Run {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            let user = ServiceKeychainCommandTests.user
            process.arguments = ["--reuid=\(user)", "--regid=\(user)", "--clear-groups", security] + arguments
            process.environment = [
                "HOME": home.url.path, "XDG_DATA_HOME": home.path("data"), "XDG_CONFIG_HOME": home.path("config"),
                "PATH": "/usr/bin:/bin", "SECURITYSERVICES_KEYCHAIN_SERVICE": daemon.socket,
            ]
            let stdin = Pipe()
            let stdout = Pipe()
            let stderr = Pipe()
            process.standardInput = stdin
            process.standardOutput = stdout
            process.standardError = stderr
            try process.run()
            stdin.fileHandleForWriting.write(Data(input.utf8))
            try stdin.fileHandleForWriting.close()
            let out = stdout.fileHandleForReading.readDataToEndOfFile()
            let err = stderr.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return Sandbox.Run(status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self))
        }
    }

    @Test("the macOS CI recipe, a process per step: create-keychain, unlock-keychain, set-keychain-settings, import, find-identity, a password added and read back; lock-keychain locks it for the next process; set-keychain-password; delete-keychain")
    func ciRecipe() throws {
        let world = try World()
        let ca = try OpenSSLCA()
        try ca.issue("root", subject: "/CN=CI Root", issuer: nil, extensions: OpenSSLCA.caExtensions(selfSigned: true))
        try ca.issue("signer", subject: "/CN=CI Signer", issuer: "root", extensions: OpenSSLCA.leafExtensions(subjectAltName: "DNS:ci.example"))
        try OpenSSLCLI.require(
            ["pkcs12", "-export", "-in", "signer.pem", "-inkey", "signer.key", "-passout", "pass:p12pw", "-out", "signer.p12"], in: ca.directory.url)
        let p12 = world.home.path("signer.p12")
        try FileManager.default.copyItem(atPath: ca.directory.path("signer.p12"), toPath: p12)
        chmod(p12, 0o644)

        let created = try world.run("create-keychain", "build.keychain", input: "build password\n")
        #expect(created.status == 0, "\(created)")
        #expect(try world.run("lock-keychain", "build.keychain").status == 0)
        let refused = try world.run("add-generic-password", "-a", "ci", "-s", "deploy", "-w", "token", "build.keychain")
        #expect(refused.status != 0 && refused.stderr.contains("interaction"), "a locked keychain took an item: \(refused)")
        #expect(try world.run("unlock-keychain", "build.keychain", input: "build password\n").status == 0)
        // Later processes find it unlocked: the service holds the unlock.
        let settings = try world.run("set-keychain-settings", "-t", "3600", "-u", "build.keychain")
        #expect(settings.status == 0, "\(settings)")
        #expect(try world.run("show-keychain-info", "build.keychain").stdout.contains("timeout=3600s"))
        let imported = try world.run("import", p12, "-k", "build.keychain", "-P", "p12pw")
        #expect(imported.status == 0, "\(imported)")
        let identities = try world.run("find-identity", "build.keychain")
        #expect(identities.status == 0 && identities.stdout.contains("CI Signer"), "\(identities)")
        #expect(try world.run("add-generic-password", "-a", "ci", "-s", "deploy", "-w", "token", "build.keychain").status == 0)
        let found = try world.run("find-generic-password", "-a", "ci", "-s", "deploy", "build.keychain")
        #expect(found.status == 0 && found.stdout.contains("keychain: \"securityd:build.keychain at \(world.daemon.socket)\""), "\(found)")
        #expect(try world.run("find-generic-password", "-a", "ci", "-s", "deploy", "-w", "build.keychain").stdout == "token\n")
        // The default keychain of the user in the service is another keychain.
        #expect(try world.run("find-generic-password", "-a", "ci", "-s", "deploy").status == 44)

        #expect(try world.run("set-keychain-password", "build.keychain", input: "build password\nnew password\nnew password\n").status == 0)
        #expect(try world.run("lock-keychain", "build.keychain").status == 0)
        let locked = try world.run("find-generic-password", "-a", "ci", "-s", "deploy", "-w", "build.keychain")
        #expect(locked.status != 0 && locked.stdout.isEmpty, "\(locked)")
        #expect(try world.run("unlock-keychain", "build.keychain", input: "build password\n").status == 51)
        #expect(try world.run("unlock-keychain", "build.keychain", input: "new password\n").status == 0)
        #expect(try world.run("find-generic-password", "-a", "ci", "-s", "deploy", "-w", "build.keychain").stdout == "token\n")

        #expect(try world.run("delete-keychain", "build.keychain").status == 0)
        let gone = try world.run("show-keychain-info", "build.keychain")
        #expect(gone.status == 50 && gone.stderr.contains("could not be found"), "\(gone)")
        // Another uid's service keychain of the same name is its own.
        #expect(try world.run("create-keychain", "build.keychain", input: "again\n").status == 0)
    }

    @Test("wrong passwords are counted by the service, across processes and password changes: each answer in a row waits longer, while the right password from another process is answered at once")
    func wrongPasswordDelay() throws {
        let world = try World()
        #expect(try world.run("create-keychain", "guarded.keychain", input: "right\n").status == 0)
        func timed(_ arguments: String..., input: String) throws -> (Sandbox.Run, Double) {
            let start = Date()
            let run = try world.run(arguments[0], arguments[1], input: input)
            return (run, Date().timeIntervalSince(start))
        }
        // First wrong: at once; second: 0.25 s; a wrong old password to set-keychain-password counts too (0.5 s).
        #expect(try timed("unlock-keychain", "guarded.keychain", input: "wrong\n").0.status == 51)
        let (second, secondSeconds) = try timed("unlock-keychain", "guarded.keychain", input: "wrong\n")
        #expect(second.status == 51 && secondSeconds >= 0.25, "\(secondSeconds) s")
        let (change, changeSeconds) = try timed("set-keychain-password", "guarded.keychain", input: "wrong\nx\nx\n")
        #expect(change.status == 51 && changeSeconds >= 0.5, "\(changeSeconds) s")
        // The fourth wrong answer waits 1 s; meanwhile the right password is answered at once.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid=\(Self.user)", "--regid=\(Self.user)", "--clear-groups", "/bin/sh", "-c", "echo wrong | \(world.security) unlock-keychain guarded.keychain"]
        process.environment = ["HOME": world.home.url.path, "SECURITYSERVICES_KEYCHAIN_SERVICE": world.daemon.socket]
        process.standardError = FileHandle.nullDevice
        let attackStart = Date()
        try process.run()
        usleep(300_000)
        let (right, rightSeconds) = try timed("unlock-keychain", "guarded.keychain", input: "right\n")
        process.waitUntilExit()
        let attackSeconds = Date().timeIntervalSince(attackStart)
        #expect(right.status == 0 && rightSeconds < 0.9, "the right password waited \(rightSeconds) s")
        #expect(process.terminationStatus == 51 && attackSeconds >= 1, "the fourth wrong password was answered after \(attackSeconds) s")
    }
}
