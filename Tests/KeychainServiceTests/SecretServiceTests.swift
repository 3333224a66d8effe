import Foundation
import KeychainService
import TestVectors
import Testing

/// The Secret Service as a desktop session runs it (a private session bus, `securityd --secret-service` as the user),
/// driven by the real clients Linux applications use: libsecret's `secret-tool`, git's libsecret credential helper,
/// Python's `secretstorage`; the same items seen through `security`.
@Suite("Secret Service: real clients on a private session bus, the service as the user runs it", .serialized, .hostOnly, .enabled(if: getuid() == 0))
struct SecretServiceTests {
    static let secretTool = "/usr/bin/secret-tool"

    /// The SHA-256 of a file, lower-case hex (the policy names applications by it).
    func sha256(_ path: String) throws -> String {
        let output = try OpenSSLCLI.require(["dgst", "-sha256", "-r", path])
        return String(output.text.prefix(64))
    }

    /// The group the service derives for an application no policy entry names.
    func derivedGroup(_ path: String) throws -> String { "app." + (try sha256(path)).prefix(32) }

    /// Grants the built `security` command the groups `groups` (it reads the items other applications stored).
    func grantSecurity(_ desktop: SecretServiceDesktop, _ groups: [String]) throws {
        let security = try BuiltExecutable.named("security").path
        try desktop.writePolicy("security.json", [ApplicationPolicy.Entry(name: "security", sha256: try sha256(security), accessGroups: groups)])
    }

    /// The Python client the tests drive (`secretstorage`), written into the session's directory.
    static func pythonClient(_ desktop: SecretServiceDesktop) throws -> String {
        let script = desktop.directory.path("client.py")
        try """
            import sys, secretstorage, secretstorage.util
            bus = secretstorage.dbus_init()
            if sys.argv[1] == "store":
                collection = secretstorage.get_default_collection(bus)
                collection.create_item("Py label", {"service": "py.example.com", "username": "carol"}, b"py-secret", replace=True)
            elif sys.argv[1] == "read":
                collection = secretstorage.get_default_collection(bus)
                item = next(collection.search_items({"service": "py.example.com"}))
                print(item.get_secret().decode(), item.get_label(), item.get_attributes()["username"], item.session.encrypted)
            elif sys.argv[1] == "change":
                collection = secretstorage.get_default_collection(bus)
                item = next(collection.search_items({"service": "py.example.com"}))
                item.set_label("Renamed")
                item.set_attributes({"service": "py.example.com", "username": "carol", "purpose": "test"})
                item.set_secret(b"changed")
                again = next(collection.search_items({"purpose": "test"}))
                print(again.get_label(), again.get_secret().decode(), sorted(again.get_attributes()))
            elif sys.argv[1] == "collections":
                work = secretstorage.create_collection(bus, "Work keys")
                work.create_item("Build token", {"service": "ci.example.com"}, b"ci-secret")
                print(work.collection_path)
                print(sorted(c.get_label() for c in secretstorage.get_all_collections(bus)))
                print(next(work.search_items({"service": "ci.example.com"})).get_secret().decode())
            elif sys.argv[1] == "lock":
                collection = secretstorage.Collection(bus, sys.argv[2])
                collection.lock()
                print("locked" if collection.is_locked() else "unlocked")
            elif sys.argv[1] == "sessions":
                opened = 0
                try:
                    for _ in range(70):
                        secretstorage.util.open_session(bus)
                        opened += 1
                except Exception as error:
                    print(opened, "refused:", error)
            elif sys.argv[1] == "unlock":
                collection = secretstorage.Collection(bus, sys.argv[2])
                print("dismissed" if collection.unlock() else "completed")
                print("locked" if collection.is_locked() else "unlocked")
            elif sys.argv[1] == "vault-store":
                collection = secretstorage.Collection(bus, sys.argv[2])
                collection.create_item("In the vault", {"service": "vault.example.com"}, b"vault-secret")
            elif sys.argv[1] == "vault-read":
                collection = secretstorage.Collection(bus, sys.argv[2])
                print("locked" if collection.is_locked() else "unlocked")
                try:
                    print(next(collection.search_items({"service": "vault.example.com"})).get_secret().decode())
                except Exception as error:
                    print("error:", error)
            """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o644)
        return script
    }

    /// Grants the Python interpreter the group `org.example.scripts`.
    func grantPython(_ desktop: SecretServiceDesktop) throws {
        let python = try FileManager.default.destinationOfSymbolicLink(atPath: "/usr/bin/python3")
        let pythonPath = python.hasPrefix("/") ? python : "/usr/bin/" + python
        try desktop.writePolicy(
            "python.json", [ApplicationPolicy.Entry(name: "python", sha256: try sha256(pythonPath), accessGroups: ["org.example.scripts"])])
    }

    @Test("secret-tool stores, looks up, searches and clears; storing again replaces; security sees the item")
    func secretTool() throws {
        let desktop = try SecretServiceDesktop()
        let store = try desktop.run(Self.secretTool, ["store", "--label=Mail password", "service", "mail.example.com", "username", "alice"], input: "hunter2 ☃")
        #expect(store.status == 0, "\(store) \(desktop.log)")
        let lookup = try desktop.run(Self.secretTool, ["lookup", "service", "mail.example.com", "username", "alice"])
        #expect(lookup.status == 0 && lookup.stdout.trimmingCharacters(in: .newlines) == "hunter2 ☃", "\(lookup) \(desktop.log)")

        let again = try desktop.run(Self.secretTool, ["store", "--label=Mail password", "service", "mail.example.com", "username", "alice"], input: "second")
        #expect(again.status == 0, "\(again)")
        let search = try desktop.run(Self.secretTool, ["search", "--all", "service", "mail.example.com"])
        #expect(search.status == 0, "\(search) \(desktop.log)")
        // secret-tool prints an item's path's last element, and its attributes on standard error.
        #expect(search.stdout.split(separator: "\n").filter { $0.hasPrefix("[/") }.count == 1, "one item: \(search.stdout)")
        #expect(search.stdout.contains("label = Mail password") && search.stdout.contains("secret = second"), "\(search.stdout)")
        #expect(search.stderr.contains("attribute.username = alice") && search.stderr.contains("attribute.service = mail.example.com"), "\(search)")

        // The same item through the keychain service's socket, as the keychain's generic password.
        try grantSecurity(desktop, [try derivedGroup(Self.secretTool)])
        let security = try desktop.run(
            try BuiltExecutable.named("security").path, ["find-generic-password", "-s", "mail.example.com", "-a", "alice", "-w"])
        #expect(security.status == 0 && security.stdout == "second\n", "\(security) \(desktop.log)")

        let clear = try desktop.run(Self.secretTool, ["clear", "service", "mail.example.com", "username", "alice"])
        #expect(clear.status == 0, "\(clear)")
        let gone = try desktop.run(Self.secretTool, ["lookup", "service", "mail.example.com", "username", "alice"])
        #expect(gone.status != 0 && gone.stdout.isEmpty, "\(gone)")
    }

    @Test("D-Bus starts the service from the deployed service file at the first call: the keychains in the user's data directory, its socket in the runtime directory")
    func activation() throws {
        let desktop = try SecretServiceDesktop(activated: true)
        #expect(!desktop.nameOwned, "nothing runs before the first call")
        let store = try desktop.run(Self.secretTool, ["store", "--label=Activated", "service", "activated.example.com"], input: "started on demand")
        #expect(store.status == 0, "\(store)")
        #expect(desktop.nameOwned)
        let lookup = try desktop.run(Self.secretTool, ["lookup", "service", "activated.example.com"])
        #expect(lookup.stdout.trimmingCharacters(in: .newlines) == "started on demand", "\(lookup)")
        let keychain = desktop.directory.path("home/.local/share/securityservices/service/\(SecretServiceDesktop.userUID)/keychain.db")
        #expect(FileManager.default.fileExists(atPath: keychain))
        #expect(FileManager.default.fileExists(atPath: desktop.socket))
    }

    @Test("another application neither finds, reads, changes nor deletes the first's item, even by its object path; sharing everyone restores gnome-keyring's way")
    func isolation() throws {
        let desktop = try SecretServiceDesktop()
        let other = try desktop.otherApplication(copying: Self.secretTool, named: "other-secret-tool")
        #expect(try desktop.run(Self.secretTool, ["store", "--label=Token", "service", "api.example.com"], input: "first's").status == 0)

        let lookup = try desktop.run(other, ["lookup", "service", "api.example.com"])
        #expect(lookup.status != 0 && lookup.stdout.isEmpty, "\(lookup)")
        let search = try desktop.run(other, ["search", "--all", "service", "api.example.com"])
        #expect(!search.stdout.contains("first's") && !search.stdout.contains("[/"), "\(search)")
        _ = try desktop.run(other, ["clear", "service", "api.example.com"])
        // The other application's own item with the same attributes is its own.
        #expect(try desktop.run(other, ["store", "--label=Token", "service", "api.example.com"], input: "other's").status == 0)
        #expect(try desktop.run(other, ["lookup", "service", "api.example.com"]).stdout.trimmingCharacters(in: .newlines) == "other's")
        #expect(try desktop.run(Self.secretTool, ["lookup", "service", "api.example.com"]).stdout.trimmingCharacters(in: .newlines) == "first's")

        // By the item's object path, from another program (dbus-send): no such object, and the item stays.
        let listing = try desktop.run(Self.secretTool, ["search", "--all", "service", "api.example.com"]).stdout
        let element = try #require(listing.split(separator: "\n").first { $0.hasPrefix("[/") }.map { String($0.dropFirst().dropLast()) })
        let path = "/org/freedesktop/secrets/collection/login" + element
        let property = try desktop.run(
            "/usr/bin/dbus-send",
            ["--session", "--print-reply", "--dest=org.freedesktop.secrets", path, "org.freedesktop.DBus.Properties.Get",
             "string:org.freedesktop.Secret.Item", "string:Label"])
        #expect(property.status != 0 && property.stderr.contains("NoSuchObject"), "\(property)")
        let delete = try desktop.run(
            "/usr/bin/dbus-send", ["--session", "--print-reply", "--dest=org.freedesktop.secrets", path, "org.freedesktop.Secret.Item.Delete"])
        #expect(delete.status != 0, "\(delete)")
        #expect(try desktop.run(Self.secretTool, ["lookup", "service", "api.example.com"]).stdout.trimmingCharacters(in: .newlines) == "first's")

        // Everyone sees everything when the user asks for it.
        let shared = try SecretServiceDesktop(arguments: ["--secret-service-sharing", "everyone"])
        #expect(try shared.run(Self.secretTool, ["store", "--label=Shared", "service", "shared.example.com"], input: "for all").status == 0)
        let seen = try shared.run(try shared.otherApplication(copying: Self.secretTool, named: "other"), ["lookup", "service", "shared.example.com"])
        #expect(seen.stdout.trimmingCharacters(in: .newlines) == "for all", "\(seen) \(shared.log)")
    }

    @Test("git's libsecret credential helper (built from Debian's git contrib sources) stores and gets a credential; security finds it by server and user")
    func gitCredentialHelper() throws {
        let desktop = try SecretServiceDesktop()
        let source = "/usr/share/doc/git/contrib/credential/libsecret/git-credential-libsecret.c"
        let helper = desktop.directory.path("git-credential-libsecret")
        let flags = try OpenSSLCLI.tool("/usr/bin/pkg-config", ["--cflags", "--libs", "glib-2.0", "libsecret-1"])
        #expect(flags.status == 0, "\(flags.stderr)")
        let build = try OpenSSLCLI.tool(
            "/usr/bin/cc", ["-o", helper, source] + flags.text.split(whereSeparator: \.isWhitespace).map(String.init))
        #expect(build.status == 0, "\(build.stderr)")
        chmod(helper, 0o755)

        let stored = try desktop.run(helper, ["store"], input: "protocol=https\nhost=git.example.com\nusername=dave\npassword=git-secret\n\n")
        #expect(stored.status == 0, "\(stored) \(desktop.log)")
        let got = try desktop.run(helper, ["get"], input: "protocol=https\nhost=git.example.com\n\n")
        #expect(got.status == 0 && got.stdout.contains("password=git-secret") && got.stdout.contains("username=dave"), "\(got) \(desktop.log)")

        try grantSecurity(desktop, [try derivedGroup(helper)])
        let security = try desktop.run(
            try BuiltExecutable.named("security").path, ["find-generic-password", "-s", "git.example.com", "-a", "dave", "-w"])
        #expect(security.status == 0 && security.stdout == "git-secret\n", "\(security) \(desktop.log)")

        #expect(try desktop.run(helper, ["erase"], input: "protocol=https\nhost=git.example.com\nusername=dave\n\n").status == 0)
        #expect(!(try desktop.run(helper, ["get"], input: "protocol=https\nhost=git.example.com\n\n").stdout.contains("password=")))
    }

    @Test("Python's secretstorage (an encrypted session) and keyring: an interpreter is refused until a policy entry grants it a group, then stores, reads, changes items in place and makes collections; a locked keychain is a locked collection that says how to unlock it")
    func pythonAndLocking() throws {
        let desktop = try SecretServiceDesktop()
        let script = try Self.pythonClient(desktop)

        let refused = try desktop.run("/usr/bin/python3", [script, "store"])
        #expect(refused.status != 0 && refused.stderr.contains("interpreter"), "\(refused)")

        try grantPython(desktop)
        let stored = try desktop.run("/usr/bin/python3", [script, "store"])
        #expect(stored.status == 0, "\(stored) \(desktop.log)")
        let read = try desktop.run("/usr/bin/python3", [script, "read"])
        // The secret came through the Diffie–Hellman session (secretstorage falls back to plain only when refused).
        #expect(read.stdout == "py-secret Py label carol True\n", "\(read) \(desktop.log)")

        // A client that opens session after session is refused past its bound; the next client has its own.
        for _ in 0..<2 {
            let sessions = try desktop.run("/usr/bin/python3", [script, "sessions"])
            #expect(sessions.stdout.hasPrefix("64 refused:") && sessions.stdout.contains("64 sessions open"), "\(sessions)")
        }

        // Label, attributes and secret changed in place; the item is found by its new attribute.
        let changed = try desktop.run("/usr/bin/python3", [script, "change"])
        #expect(changed.stdout == "Renamed changed ['purpose', 'service', 'username']\n", "\(changed) \(desktop.log)")

        // A collection made through the API is a keychain of the user's in the service.
        let collections = try desktop.run("/usr/bin/python3", [script, "collections"])
        #expect(collections.stdout == "/org/freedesktop/secrets/collection/k_Work_2dkeys\n['Login', 'Work-keys']\nci-secret\n", "\(collections) \(desktop.log)")

        // Python's keyring library, through its Secret Service backend; security finds the password by service and user.
        let keyring = try desktop.run("/usr/bin/python3", ["-m", "keyring", "set", "keyring.example.com", "erin"], input: "keyring-secret\n")
        #expect(keyring.status == 0, "\(keyring) \(desktop.log)")
        let fromKeyring = try desktop.run("/usr/bin/python3", ["-m", "keyring", "get", "keyring.example.com", "erin"])
        #expect(fromKeyring.stdout == "keyring-secret\n", "\(fromKeyring)")
        try grantSecurity(desktop, ["org.example.scripts"])
        let security = try BuiltExecutable.named("security").path
        let found = try desktop.run(security, ["find-generic-password", "-s", "keyring.example.com", "-a", "erin", "-w"])
        #expect(found.stdout == "keyring-secret\n", "\(found)")

        // Lock: the default keychain has no password, so it stays unlocked.
        #expect(try desktop.run("/usr/bin/python3", [script, "lock", "/org/freedesktop/secrets/collection/login"]).stdout == "unlocked\n")

        // A password-locked keychain of the user's, made and locked through the keychain service's socket, is a
        // locked collection: the secret is refused while it is locked, the error says how to unlock, and once
        // `security unlock-keychain` unlocked it, the same client reads the secret.
        let created = try desktop.run(security, ["create-keychain", "vault"], input: "vault password\n")
        #expect(created.status == 0, "\(created)")
        let vault = "/org/freedesktop/secrets/collection/k_vault"
        #expect(try desktop.run("/usr/bin/python3", [script, "vault-store", vault]).status == 0)
        #expect(try desktop.run(security, ["lock-keychain", "vault"]).status == 0)
        let locked = try desktop.run("/usr/bin/python3", [script, "vault-read", vault])
        #expect(locked.stdout.hasPrefix("locked\nerror:"), "\(locked)")
        let unlock = try desktop.run(
            "/usr/bin/dbus-send",
            ["--session", "--print-reply", "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.Unlock",
             "array:objpath:" + vault])
        #expect(unlock.status != 0 && unlock.stderr.contains("no prompter") && unlock.stderr.contains("security unlock-keychain"), "\(unlock)")
        #expect(try desktop.run(security, ["unlock-keychain", "vault"], input: "vault password\n").status == 0)
        let unlocked = try desktop.run("/usr/bin/python3", [script, "vault-read", vault])
        #expect(unlocked.stdout == "unlocked\nvault-secret\n", "\(unlocked) \(desktop.log)")
        // Lock through the Secret Service locks it for every process of the user: the next client finds it locked.
        #expect(try desktop.run("/usr/bin/python3", [script, "lock", vault]).stdout == "locked\n")
        #expect(try desktop.run("/usr/bin/python3", [script, "vault-read", vault]).stdout.hasPrefix("locked\nerror:"))
    }

    @Test("with a prompter, Unlock answers with a prompt: the client's Prompt runs the prompter (a wrong password asks again) and the keychain opens for every process; a prompter that fails completes the prompt dismissed")
    func prompts() throws {
        // The prompter: it writes what it was asked, answers wrong once, then right; with a `fail` file it fails.
        let prompterDirectory = try TemporaryDirectory("prompter")
        chmod(prompterDirectory.url.path, 0o755)
        chown(prompterDirectory.url.path, SecretServiceDesktop.userUID, SecretServiceDesktop.userUID)
        let prompter = prompterDirectory.path("ask")
        try BuiltExecutable.install(
            Data(
                """
                #!/bin/sh
                [ -e "\(prompterDirectory.path("fail"))" ] && exit 1
                echo "$1" >> "\(prompterDirectory.path("asked"))"
                if [ "$(wc -l < "\(prompterDirectory.path("asked"))")" = 1 ]; then echo "not it"; else echo "vault password"; fi
                """.utf8), at: prompter)
        let desktop = try SecretServiceDesktop(arguments: ["--prompter", prompter])
        let script = try Self.pythonClient(desktop)
        try grantPython(desktop)
        let security = try BuiltExecutable.named("security").path
        #expect(try desktop.run(security, ["create-keychain", "vault"], input: "vault password\n").status == 0)
        let vault = "/org/freedesktop/secrets/collection/k_vault"
        #expect(try desktop.run("/usr/bin/python3", [script, "vault-store", vault]).status == 0)
        #expect(try desktop.run(security, ["lock-keychain", "vault"]).status == 0)

        let unlocked = try desktop.run("/usr/bin/python3", [script, "unlock", vault])
        #expect(unlocked.stdout == "completed\nunlocked\n", "\(unlocked) \(desktop.log)")
        let asked = try String(contentsOfFile: prompterDirectory.path("asked"), encoding: .utf8).split(separator: "\n")
        #expect(asked.count == 2 && asked[0].hasPrefix("Unlock the keychain vault for /usr/bin/python3") && asked[1].hasPrefix("Wrong password. "), "\(asked)")
        #expect(try desktop.run("/usr/bin/python3", [script, "vault-read", vault]).stdout == "unlocked\nvault-secret\n")

        // The user gives up (the prompter fails): dismissed, still locked.
        #expect(try desktop.run(security, ["lock-keychain", "vault"]).status == 0)
        _ = FileManager.default.createFile(atPath: prompterDirectory.path("fail"), contents: nil)
        let dismissed = try desktop.run("/usr/bin/python3", [script, "unlock", vault])
        #expect(dismissed.stdout == "dismissed\nlocked\n", "\(dismissed) \(desktop.log)")
    }
}
