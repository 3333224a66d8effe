import Foundation
import Testing

/// security(1)'s keychain commands over password-locked keychains, each command its own process (so each starts
/// with the keychain locked, as a new process must).
@Suite("security command: password-locked keychains")
struct KeychainCommandTests {
    @Test("create-keychain, show-keychain-info, set-keychain-settings, unlock-keychain, set-keychain-password, delete-keychain; -p refused")
    func lifecycle() throws {
        let sandbox = try Sandbox()
        let path = sandbox.directory.appendingPathComponent("locked.keychain-db").path
        #expect(try sandbox.run(["create-keychain", path], input: "first password\n") == Sandbox.Run(status: 0, stdout: "", stderr: ""))
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(try sandbox.run(["create-keychain", path], input: "first password\n").status == 48, "errSecDuplicateKeychain")
        #expect(try sandbox.run(["show-keychain-info", path]) == Sandbox.Run(status: 0, stdout: "Keychain \"\(path)\" timeout=300s\n", stderr: ""))

        #expect(try sandbox.run(["set-keychain-settings", "-l", "-t", "60", path], input: "first password\n").status == 0)
        #expect(try sandbox.run(["show-keychain-info", path]).stdout == "Keychain \"\(path)\" lock-on-sleep timeout=60s\n")
        #expect(try sandbox.run(["set-keychain-settings", path], input: "first password\n").status == 0)
        #expect(try sandbox.run(["show-keychain-info", path]).stdout == "Keychain \"\(path)\" no-timeout\n")

        let wrong = try sandbox.run(["unlock-keychain", path], input: "wrong\n")
        #expect(wrong == Sandbox.Run(status: 51, stdout: "", stderr: "security: SecKeychainUnlock \(path): The user name or passphrase you entered is not correct.\n"))
        #expect(try sandbox.run(["unlock-keychain", path], input: "first password\n").status == 0)
        // A new process starts locked: an add is refused, not prompted for.
        let add = try sandbox.run(["add-generic-password", "-a", "alice", "-s", "mail", "-w", "secret", path])
        #expect(add.status == 36 && add.stderr.hasSuffix(": User interaction is not allowed.\n"), "\(add)")

        #expect(try sandbox.run(["set-keychain-password", path], input: "wrong\nsecond password\n").status == 51)
        #expect(try sandbox.run(["set-keychain-password", path], input: "first password\nsecond password\n").status == 0)
        #expect(try sandbox.run(["unlock-keychain", path], input: "first password\n").status == 51)
        #expect(try sandbox.run(["unlock-keychain", path], input: "second password\n").status == 0)
        for refused in [["unlock-keychain", "-p", "second password", path], ["create-keychain", "-p", "x", path + "2"],
                        ["set-keychain-password", "-o", "x", path]] {
            let run = try sandbox.run(refused)
            #expect(run.status == 64 && run.stderr.contains("visible to other users' ps"), "\(refused): \(run)")
        }
        #expect(!FileManager.default.fileExists(atPath: path + "2"))
        #expect(try sandbox.run(["lock-keychain", path]).status == 0)

        #expect(try sandbox.run(["delete-keychain", path]) == Sandbox.Run(status: 0, stdout: "", stderr: ""))
        #expect(!FileManager.default.fileExists(atPath: path) && !FileManager.default.fileExists(atPath: path + ".key"))
        let again = try sandbox.run(["delete-keychain", path])
        #expect(again == Sandbox.Run(status: 50, stdout: "", stderr: "security: SecKeychainOpen \(path): The specified keychain could not be found.\n"))
    }
}

extension KeychainCommandTests {
    @Test("list-keychains, default-keychain, login-keychain: the user's and the system's domains, and a search through the list")
    func searchList() throws {
        let sandbox = try Sandbox()
        let environment = [
            "XDG_CONFIG_HOME": sandbox.directory.appendingPathComponent("config").path,
            "SECURITYSERVICES_SYSTEM_KEYCHAIN_PREFERENCES": sandbox.directory.appendingPathComponent("system.json").path,
        ]
        func security(_ arguments: String..., input: String? = nil) throws -> Sandbox.Run {
            try sandbox.run(arguments, input: input, environment: environment)
        }
        func listing(_ paths: String...) -> Sandbox.Run {
            Sandbox.Run(status: 0, stdout: paths.map { "    \"\($0)\"\n" }.joined(), stderr: "")
        }
        let made = sandbox.directory.appendingPathComponent("xdg/securityservices/keychain.db").path
        let locked = sandbox.directory.appendingPathComponent("locked.keychain-db").path
        let plain = sandbox.directory.appendingPathComponent("plain.db").path
        #expect(try security("list-keychains") == listing(made))
        #expect(try security("create-keychain", locked, input: "pw\n").status == 0)
        #expect(try security("add-generic-password", "-a", "carol", "-s", "mail", "-w", "carol-secret", plain).status == 0)

        #expect(try security("list-keychains", "-s", locked, plain).status == 0)
        #expect(try security("list-keychains") == listing(locked, plain))
        #expect(try security("list-keychains", "-d", "user") == listing(locked, plain))
        #expect(try security("list-keychains", "-d", "system") == listing())
        // A search goes through the list: the locked keychain has no such item, the plain one has.
        let found = try security("find-generic-password", "-a", "carol", "-w")
        #expect(found == Sandbox.Run(status: 0, stdout: "carol-secret\n", stderr: ""))

        #expect(try security("default-keychain") == listing(made))
        #expect(try security("default-keychain", "-s", plain).status == 0)
        #expect(try security("default-keychain") == listing(plain))
        // New items go to the default keychain.
        #expect(try security("add-generic-password", "-a", "dave", "-s", "mail", "-w", "dave-secret").status == 0)
        #expect(try security("find-generic-password", "-a", "dave", "-w", plain).stdout == "dave-secret\n")

        #expect(try security("login-keychain") == listing(made))
        #expect(try security("login-keychain", "-s", locked).status == 0)
        #expect(try security("login-keychain") == listing(locked))

        #expect(try security("default-keychain", "-d", "system", "-s", plain).status == 0)
        #expect(try security("default-keychain", "-d", "system") == listing(plain))
        #expect(try security("list-keychains", "-d", "common") == listing())
        #expect(try security("default-keychain", "-d", "dynamic", "-s", plain).status == 252, "errSecUnimplemented")
        let missing = try security("list-keychains", "-s", sandbox.directory.appendingPathComponent("none.db").path)
        #expect(missing.status == 50, "\(missing)")
        #expect(try security("list-keychains", "-d", "user") == listing(locked, plain), "a failed set changes nothing")
    }
}

extension KeychainCommandTests {
    @Test("add-generic-password and add-internet-password -T: the item's list trusts those applications alone; -A and no -T make none; -A with -T and an unreadable -T are refused")
    func trustedApplications() throws {
        let sandbox = try Sandbox()
        let security = try Sandbox.binary().path
        try sandbox.expectSilentSuccess("add-generic-password", "-a", "alice", "-s", "acl", "-w", "for true", "-T", "/bin/true")
        let refused = try sandbox.security("find-generic-password", "-a", "alice", "-s", "acl", "-w")
        #expect(refused.status == 36 && refused.stderr.hasSuffix(": User interaction is not allowed.\n"), "\(refused)")
        #expect(try sandbox.security("find-generic-password", "-a", "alice", "-s", "acl").status == 0, "the attributes stay readable")
        #expect(try sandbox.security("delete-generic-password", "-a", "alice", "-s", "acl").status == 36)

        try sandbox.expectSilentSuccess("add-generic-password", "-a", "bob", "-s", "acl", "-w", "for security", "-T", security, "-T", "/bin/true")
        #expect(try sandbox.security("find-generic-password", "-a", "bob", "-s", "acl", "-w") == Sandbox.Run(status: 0, stdout: "for security\n", stderr: ""))
        try sandbox.expectSilentSuccess("add-internet-password", "-a", "carol", "-s", "example.com", "-w", "web", "-T", "/bin/true")
        #expect(try sandbox.security("find-internet-password", "-a", "carol", "-s", "example.com", "-w").status == 36)
        try sandbox.expectSilentSuccess("add-generic-password", "-a", "dave", "-s", "acl", "-w", "open", "-A")
        #expect(try sandbox.security("find-generic-password", "-a", "dave", "-s", "acl", "-w").stdout == "open\n")

        let both = try sandbox.security("add-generic-password", "-a", "erin", "-s", "acl", "-w", "x", "-A", "-T", "/bin/true")
        #expect(both.status == 64 && both.stderr.contains("-A and -T exclude each other"), "\(both)")
        let missing = try sandbox.security("add-generic-password", "-a", "erin", "-s", "acl", "-w", "x", "-T", "/nonexistent/app")
        #expect(missing.status == 206 && missing.stderr.hasPrefix("security: SecTrustedApplicationCreateFromPath (/nonexistent/app): "), "\(missing)")
        #expect(try sandbox.security("find-generic-password", "-a", "erin", "-s", "acl").status == 44, "nothing was added")
    }
}

extension KeychainCommandTests {
    @Test("the default keychain's own directory, found open to others, is closed (0700); its files are 0600")
    func defaultDirectoryNarrowed() throws {
        let sandbox = try Sandbox()
        let folder = sandbox.directory.appendingPathComponent("xdg/securityservices").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        chmod(folder, 0o755)
        let added = try sandbox.run(["add-generic-password", "-a", "dana", "-s", "mail", "-w", "secret"])
        #expect(added.status == 0, "\(added)")
        var status = stat()
        #expect(stat(folder, &status) == 0 && status.st_mode & 0o777 == 0o700, "\(String(status.st_mode & 0o777, radix: 8))")
        for name in ["keychain.db", "keychain.db.key"] {
            #expect(stat(folder + "/" + name, &status) == 0 && status.st_mode & 0o077 == 0, "\(name)")
        }
    }
}
