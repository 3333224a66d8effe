import Foundation
import Keychain
import Testing

/// The `security` command as a user runs it: the built binary as a subprocess, each test on a keychain of its
/// own, asserting exact stdout, stderr and exit status against macOS security(1)'s.
@Suite("security command")
struct SecurityCommandTests {
    static let notFound = Sandbox.Run(
        status: 44, stdout: "",
        stderr: "security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain.\n")
    static let duplicate = "The specified item already exists in the keychain.\n"
    static let silent = Sandbox.Run(status: 0, stdout: "", stderr: "")

    @Test("add, then find -w prints exactly the password and a newline")
    func addThenFindPassword() throws {
        let sandbox = try Sandbox()
        let added = try sandbox.run([
            "add-generic-password", "-a", "bob", "-s", "mail", "-w", "hunter2", "--keychain", sandbox.keychain,
        ])
        #expect(added == Self.silent)
        let found = try sandbox.run([
            "find-generic-password", "-a", "bob", "-s", "mail", "-w", "--keychain", sandbox.keychain,
        ])
        #expect(found == Sandbox.Run(status: 0, stdout: "hunter2\n", stderr: ""))
        // The keychain may also be the trailing argument, as on macOS.
        #expect(try sandbox.security("find-generic-password", "-s", "mail", "-w").stdout == "hunter2\n")
    }

    /// A setting the dispatcher cannot use from the environment is reported, not dropped: a typo would silently
    /// mean `auto`.
    @Test("a dispatch setting the process cannot use is said once on stderr, and the command still works")
    func environmentWarnings() throws {
        let sandbox = try Sandbox()
        let environment = ["SECURITYSERVICES_DISPATCH": "kernel!", "SECURITYSERVICES_THRESHOLD_AES_CBC_ENCRYPT": "soon"]
        let added = try sandbox.run(
            ["add-generic-password", "-a", "bob", "-s", "mail", "-w", "hunter2", sandbox.keychain], environment: environment)
        #expect(added.status == 0)
        let lines = added.stderr.split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("securityservices: SECURITYSERVICES_DISPATCH=kernel! is not auto") }.count == 1, "\(added.stderr)")
        #expect(lines.filter { $0.hasPrefix("securityservices: SECURITYSERVICES_THRESHOLD_AES_CBC_ENCRYPT=soon is not a byte count") }.count == 1)
        #expect(lines.count == 2, "nothing else: \(added.stderr)")
        // Settings it can use say nothing.
        let found = try sandbox.run(
            ["find-generic-password", "-s", "mail", "-w", sandbox.keychain], environment: ["SECURITYSERVICES_DISPATCH": "software"])
        #expect(found == Sandbox.Run(status: 0, stdout: "hunter2\n", stderr: ""))
    }

    @Test("find -g prints macOS's attribute layout on stdout and the password on stderr")
    func findShowsAttributes() throws {
        let sandbox = try Sandbox()
        try sandbox.expectSilentSuccess(
            "add-generic-password", "-a", "bob", "-s", "mail", "-w", "hunter2", "-l", "Mail Account", "-j", "a comment",
            "-D", "application password", "-G", "gen", "-c", "aapl", "-C", "note")
        let found = try sandbox.security("find-generic-password", "-a", "bob", "-g")
        #expect(found.status == 0)
        #expect(found.stderr == "password: \"hunter2\"\n")
        #expect(
            Sandbox.normalizingDates(found.stdout) == """
                keychain: "\(sandbox.keychain)"
                class: "genp"
                attributes:
                    0x00000007 <blob>="Mail Account"
                    "acct"<blob>="bob"
                    "agrp"<blob>="security"
                    "cdat"<timedate>=<date>
                    "crtr"<uint32>="aapl"
                    "desc"<blob>="application password"
                    "gena"<blob>="gen"
                    "icmt"<blob>="a comment"
                    "invi"<sint32>=<NULL>
                    "mdat"<timedate>=<date>
                    "nega"<sint32>=<NULL>
                    "svce"<blob>="mail"
                    "type"<uint32>="note"

                """)
        // The dates are CSSM times, as hex and as text: this year's, NUL-terminated.
        let line = try #require(found.stdout.split(separator: "\n").first { $0.contains("\"cdat\"") })
        let date = try #require(line.firstMatch(of: #/=0x([0-9A-F]{32})  "([0-9]{14})Z\\000"/#))
        let cssmTime = Array("\(date.2)Z".utf8) + [0]
        #expect(String(date.1) == cssmTime.map { String(format: "%02X", $0) }.joined())
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
        let year = calendar.component(.year, from: Date())
        #expect(date.2.hasPrefix(String(year)) || date.2.hasPrefix(String(year - 1)))
    }

    @Test("a duplicate add without -U fails with Apple's message and exit status 45, naming the keychain")
    func duplicateAdd() throws {
        let sandbox = try Sandbox()
        try sandbox.expectSilentSuccess("add-generic-password", "-a", "bob", "-s", "mail", "-w", "first")
        #expect(
            try sandbox.security("add-generic-password", "-a", "bob", "-s", "mail", "-w", "second")
                == Sandbox.Run(
                    status: 45, stdout: "",
                    stderr: "security: SecKeychainItemCreateFromContent (\(sandbox.keychain)): \(Self.duplicate)"))
        #expect(try sandbox.security("find-generic-password", "-a", "bob", "-w").stdout == "first\n")

        try sandbox.expectSilentSuccess("add-internet-password", "-a", "bob", "-s", "example.com", "-w", "pw")
        #expect(
            try sandbox.security("add-internet-password", "-a", "bob", "-s", "example.com", "-w", "pw")
                == Sandbox.Run(
                    status: 45, stdout: "",
                    stderr: "security: SecKeychainAddInternetPassword \(sandbox.keychain): \(Self.duplicate)"))
    }

    @Test("-U updates the existing item (and adds one when there is none); without -w it keeps the password")
    func updateWithU() throws {
        let sandbox = try Sandbox()
        try sandbox.expectSilentSuccess("add-generic-password", "-a", "bob", "-s", "mail", "-w", "old")
        try sandbox.expectSilentSuccess(
            "add-generic-password", "-U", "-a", "bob", "-s", "mail", "-w", "new", "-j", "rotated")
        #expect(try sandbox.security("find-generic-password", "-a", "bob", "-s", "mail", "-w").stdout == "new\n")
        let shown = try sandbox.security("find-generic-password", "-a", "bob")
        #expect(shown.stdout.contains("    \"icmt\"<blob>=\"rotated\"\n"))

        try sandbox.expectSilentSuccess("add-generic-password", "-U", "-a", "bob", "-s", "mail", "-j", "again")
        #expect(try sandbox.security("find-generic-password", "-a", "bob", "-s", "mail", "-w").stdout == "new\n")

        try sandbox.expectSilentSuccess("add-generic-password", "-U", "-a", "carol", "-s", "mail", "-w", "fresh")
        #expect(try sandbox.security("find-generic-password", "-a", "carol", "-w").stdout == "fresh\n")
        // Still one item for bob: -U changed it rather than adding a second.
        let dump = try sandbox.security("dump-keychain")
        #expect(dump.stdout.components(separatedBy: "\"acct\"<blob>=\"bob\"").count == 2)
    }

    @Test("finding a missing item fails with Apple's message and exit status 44")
    func findMissing() throws {
        let sandbox = try Sandbox()
        try sandbox.expectSilentSuccess("add-generic-password", "-a", "bob", "-s", "mail", "-w", "pw")
        #expect(try sandbox.security("find-generic-password", "-a", "alice") == Self.notFound)
        #expect(try sandbox.security("find-generic-password", "-a", "alice", "-w") == Self.notFound)
        #expect(try sandbox.security("find-generic-password", "-s", "mail", "-l", "other label", "-g") == Self.notFound)
        #expect(try sandbox.security("find-internet-password", "-a", "bob") == Self.notFound)
    }

    @Test("a named keychain that does not exist is errSecNoSuchKeychain for find, delete and dump, and is not created")
    func missingKeychain() throws {
        let sandbox = try Sandbox()
        let missing = sandbox.directory.appendingPathComponent("missing.db").path
        let expected = Sandbox.Run(
            status: 50, stdout: "",
            stderr: "security: SecKeychainOpen \(missing): The specified keychain could not be found.\n")
        #expect(try sandbox.run(["find-generic-password", "-a", "bob", "--keychain", missing]) == expected)
        #expect(try sandbox.run(["delete-internet-password", "-a", "bob", missing]) == expected)
        #expect(try sandbox.run(["dump-keychain", missing]) == expected)
        #expect(!FileManager.default.fileExists(atPath: missing))
    }

    @Test("delete prints the item, says so on stderr, and a find after it fails")
    func deleteThenFind() throws {
        let sandbox = try Sandbox()
        try sandbox.expectSilentSuccess("add-generic-password", "-a", "bob", "-s", "mail", "-w", "pw")
        try sandbox.expectSilentSuccess("add-generic-password", "-a", "carol", "-s", "mail", "-w", "pw2")
        let shown = try sandbox.security("find-generic-password", "-a", "bob", "-s", "mail")
        #expect(
            try sandbox.security("delete-generic-password", "-a", "bob", "-s", "mail")
                == Sandbox.Run(status: 0, stdout: shown.stdout, stderr: "password has been deleted.\n"))
        #expect(try sandbox.security("find-generic-password", "-a", "bob") == Self.notFound)
        #expect(try sandbox.security("delete-generic-password", "-a", "bob") == Self.notFound)
        // The other item is untouched.
        #expect(try sandbox.security("find-generic-password", "-s", "mail", "-w").stdout == "pw2\n")
        // Deleting needs something to match, as on macOS.
        let unqualified = try sandbox.security("delete-generic-password")
        #expect(unqualified.status == 64)
        #expect(unqualified.stderr.hasPrefix("Error: At least one attribute to match is required.\n"))
    }

    /// Each command is a process of its own: the deleted row's sealed bytes must leave `keychain.db` and its WAL before
    /// the delete's process exits, not wait for a connection that stays open.
    @Test("a deleted password's sealed bytes are in neither the database nor its WAL once delete-generic-password returns")
    func deletedBytesLeaveTheFiles() throws {
        let sandbox = try Sandbox()
        try sandbox.expectSilentSuccess("add-generic-password", "-a", "bob", "-s", "mail", "-w", "bob-secret")
        try sandbox.expectSilentSuccess("add-generic-password", "-a", "carol", "-s", "mail", "-w", "carol-secret")
        // The sealed bytes as stored: what a thief holding the key file could still open.
        let sealed = try #require(
            try Database(path: sandbox.keychain).query("SELECT secret FROM item ORDER BY id LIMIT 1").first.flatMap { row -> [UInt8]? in
                if case .blob(let bytes) = row[0] { bytes } else { nil }
            })
        func onDisk() throws -> Bool {
            try [sandbox.keychain, sandbox.keychain + "-wal"].contains { path in
                guard FileManager.default.fileExists(atPath: path) else { return false }
                return try Data(contentsOf: URL(fileURLWithPath: path)).range(of: Data(sealed)) != nil
            }
        }
        #expect(try onDisk(), "the search can fail: the sealed bytes are there before the delete")
        #expect(try sandbox.security("delete-generic-password", "-a", "bob", "-s", "mail").status == 0)
        #expect(try !onDisk(), "the deleted password's sealed bytes are still on disk")
        // Later commands find and add as before.
        try sandbox.expectSilentSuccess("add-generic-password", "-a", "dave", "-s", "mail", "-w", "dave-secret")
        #expect(try sandbox.security("find-generic-password", "-a", "carol", "-w").stdout == "carol-secret\n")
        #expect(try !onDisk())
    }

    /// Apple's message for the status ("No keychain is available. You may need to restart your computer.") suggests a
    /// restart, which does not mend a lost key file: the command says what is lost instead.
    @Test("a lost master key file: the command says which file is missing and that the items cannot be recovered without it; errSecNotAvailable's exit status")
    func lostMasterKeyFile() throws {
        let sandbox = try Sandbox()
        try sandbox.expectSilentSuccess("add-generic-password", "-a", "bob", "-s", "mail", "-w", "bob-secret")
        try FileManager.default.removeItem(atPath: sandbox.keychain + ".key")
        for (arguments, call) in [
            (["find-generic-password", "-a", "bob"], "SecItemCopyMatching"),
            (["add-generic-password", "-a", "carol", "-s", "mail", "-w", "x"], "SecKeychainItemCreateFromContent"),
        ] {
            let run = try sandbox.security(arguments)
            #expect(run.status == 53, "errSecNotAvailable's low byte: \(run)")
            #expect(run.stderr.hasPrefix("security: \(call)"), "\(run)")
            #expect(run.stderr.contains("the master key file \(sandbox.keychain).key is missing"), "\(run)")
            #expect(run.stderr.contains("cannot be recovered without that file"), "\(run)")
            #expect(!run.stderr.contains("restart your computer"), "\(run)")
        }
        #expect(!FileManager.default.fileExists(atPath: sandbox.keychain + ".key"), "no new key file was made")
    }

    @Test("internet password round trip with protocol, port, path and security domain")
    func internetPassword() throws {
        let sandbox = try Sandbox()
        try sandbox.expectSilentSuccess(
            "add-internet-password", "-a", "bob", "-s", "example.com", "-w", "web-secret", "-r", "htps", "-P", "443",
            "-p", "/login", "-d", "realm")
        let password = try sandbox.security(
            "find-internet-password", "-s", "example.com", "-r", "htps", "-P", "443", "-p", "/login", "-w")
        #expect(password == Sandbox.Run(status: 0, stdout: "web-secret\n", stderr: ""))

        let found = try sandbox.security("find-internet-password", "-a", "bob", "-g")
        #expect(found.status == 0)
        #expect(found.stderr == "password: \"web-secret\"\n")
        #expect(
            Sandbox.normalizingDates(found.stdout) == """
                keychain: "\(sandbox.keychain)"
                class: "inet"
                attributes:
                    0x00000007 <blob>="example.com"
                    "acct"<blob>="bob"
                    "agrp"<blob>="security"
                    "atyp"<blob>="dflt"
                    "cdat"<timedate>=<date>
                    "crtr"<uint32>=<NULL>
                    "desc"<blob>=<NULL>
                    "icmt"<blob>=<NULL>
                    "invi"<sint32>=<NULL>
                    "mdat"<timedate>=<date>
                    "nega"<sint32>=<NULL>
                    "path"<blob>="/login"
                    "port"<uint32>=0x000001BB\u{20}
                    "ptcl"<uint32>="htps"
                    "sdmn"<blob>="realm"
                    "srvr"<blob>="example.com"
                    "type"<uint32>=<NULL>

                """)
        for mismatch in [["-P", "8443"], ["-r", "http"], ["-p", "/other"], ["-t", "form"], ["-d", "other"]] {
            let arguments = ["find-internet-password", "-s", "example.com"] + mismatch + [sandbox.keychain]
            #expect(try sandbox.run(arguments) == Self.notFound, "\(mismatch)")
        }
        #expect(
            try sandbox.security("find-internet-password", "-s", "example.com", "-t", "dflt", "-w").stdout
                == "web-secret\n")

        #expect(
            try sandbox.security("delete-internet-password", "-s", "example.com", "-P", "443")
                == Sandbox.Run(status: 0, stdout: found.stdout, stderr: "password has been deleted.\n"))
        #expect(try sandbox.security("find-internet-password", "-s", "example.com") == Self.notFound)
    }

    @Test("dump-keychain shows every item's attributes, and the secrets only with -d")
    func dumpKeychain() throws {
        let sandbox = try Sandbox()
        try sandbox.expectSilentSuccess("add-generic-password", "-a", "bob", "-s", "mail", "-w", "generic-secret")
        try sandbox.expectSilentSuccess(
            "add-internet-password", "-a", "bob", "-s", "example.com", "-w", "internet-secret")
        let generic = try sandbox.security("find-generic-password", "-a", "bob").stdout
        let internet = try sandbox.security("find-internet-password", "-a", "bob").stdout

        let dump = try sandbox.security("dump-keychain")
        #expect(dump == Sandbox.Run(status: 0, stdout: generic + internet, stderr: ""))
        #expect(!dump.stdout.contains("generic-secret") && !dump.stdout.contains("internet-secret"))
        #expect(!dump.stdout.contains("data:"))

        let withData = try sandbox.security("dump-keychain", "-d")
        let expected = generic + "data:\n\"generic-secret\"\n" + internet + "data:\n\"internet-secret\"\n"
        #expect(withData == Sandbox.Run(status: 0, stdout: expected, stderr: ""))

        // A keychain whose only item is in another group dumps nothing.
        let other = try Sandbox()
        try other.expectSilentSuccess("add-generic-password", "-a", "x", "-s", "y", "--access-group", "other")
        #expect(try other.security("dump-keychain", "-d") == Self.silent)
    }

    @Test("dump-keychain also shows certificates and keys, with macOS's type tags")
    func dumpCertificatesAndKeys() throws {
        let sandbox = try Sandbox()
        // Added through the store: the command has no add for these classes.
        let store = try KeychainStore(path: sandbox.keychain, accessGroups: ["security"])
        try store.add(
            .certificate,
            attributes: [
                .label: .string("cert label"), .certificateType: .number(3), .issuer: .data(Data([0x30, 0x01])),
                .serialNumber: .data(Data([0x05])), .publicKeyHash: .data(Data([0x01, 0x02])),
            ],
            data: Data([0x30, 0x82, 0x01]))
        try store.add(
            .key,
            attributes: [
                .label: .string("key label"), .keyClass: .number(1), .applicationLabel: .data(Data([0xAB])),
                .applicationTag: .data(Data("com.example.key".utf8)), .keyType: .number(42),
                .keySizeInBits: .number(256), .effectiveKeySize: .number(256), .canSign: .bool(true),
                .canDecrypt: .bool(false),
            ],
            data: Data("key".utf8))
        let dump = try sandbox.security("dump-keychain", "-d")
        #expect(dump.status == 0 && dump.stderr.isEmpty)
        #expect(
            Sandbox.normalizingDates(dump.stdout) == """
                keychain: "\(sandbox.keychain)"
                class: "cert"
                attributes:
                    0x00000007 <blob>="cert label"
                    "agrp"<blob>="security"
                    "cdat"<timedate>=<date>
                    "ctyp"<uint32>=0x00000003\u{20}
                    "issr"<blob>=0x3001  "0\\001"
                    "mdat"<timedate>=<date>
                    "pkhh"<blob>=0x0102\u{20}
                    "slnr"<blob>=0x05\u{20}
                data:
                0x308201  "0\\202\\001"
                keychain: "\(sandbox.keychain)"
                class: "keys"
                attributes:
                    0x00000007 <blob>="key label"
                    "agrp"<blob>="security"
                    "atag"<blob>="com.example.key"
                    "bsiz"<uint32>=0x00000100\u{20}
                    "cdat"<timedate>=<date>
                    "decr"<sint32>=0x00000000\u{20}
                    "esiz"<uint32>=0x00000100\u{20}
                    "kcls"<uint32>=0x00000001\u{20}
                    "klbl"<blob>=0xAB\u{20}
                    "mdat"<timedate>=<date>
                    "sign"<sint32>=0x00000001\u{20}
                    "type"<uint32>=0x0000002A  "\\000\\000\\000*"
                data:
                "key"

                """)
    }

    @Test("two access groups do not see each other's items; several groups see both and add to the first")
    func accessGroups() throws {
        let sandbox = try Sandbox()
        let (a, b) = (["--access-group", "com.a"], ["--access-group", "com.b"])
        try sandbox.expectSilentSuccess(["add-generic-password", "-a", "bob", "-s", "mail", "-w", "a-secret"] + a)
        // The same account and service in another group is another item, not a duplicate.
        try sandbox.expectSilentSuccess(["add-generic-password", "-a", "bob", "-s", "mail", "-w", "b-secret"] + b)

        #expect(try sandbox.security(["find-generic-password", "-a", "bob", "-w"] + a).stdout == "a-secret\n")
        #expect(try sandbox.security(["find-generic-password", "-a", "bob", "-w"] + b).stdout == "b-secret\n")
        #expect(
            try sandbox.security(["find-generic-password", "-a", "bob", "--access-group", "com.c"]) == Self.notFound)
        let shown = try sandbox.security(["find-generic-password", "-a", "bob"] + a)
        #expect(shown.stdout.contains("    \"agrp\"<blob>=\"com.a\"\n"))

        let dumpA = try sandbox.security(["dump-keychain", "-d"] + a)
        #expect(
            dumpA.stdout.contains("a-secret") && !dumpA.stdout.contains("b-secret") && !dumpA.stdout.contains("com.b"))
        // Deleting in one group leaves the other's item.
        #expect(try sandbox.security(["delete-generic-password", "-a", "bob"] + a).status == 0)
        #expect(try sandbox.security(["find-generic-password", "-a", "bob", "-w"] + b).stdout == "b-secret\n")

        // With several groups, adds go to the first: com.b already has bob/mail.
        let both = b + a
        #expect(
            try sandbox.security(["add-generic-password", "-a", "bob", "-s", "mail", "-w", "third"] + both).status == 45
        )
        try sandbox.expectSilentSuccess(["add-generic-password", "-a", "carol", "-s", "mail", "-w", "c-secret"] + both)
        #expect(try sandbox.security(["find-generic-password", "-a", "carol", "-w"] + b).stdout == "c-secret\n")
        #expect(try sandbox.security(["find-generic-password", "-a", "carol"] + a) == Self.notFound)
    }

    @Test("a password given with -w never appears in the output of a failing command")
    func passwordNeverLeaks() throws {
        let sandbox = try Sandbox()
        let secret = "Tr0ub4dor-\(UUID().uuidString)"
        try sandbox.expectSilentSuccess("add-generic-password", "-a", "bob", "-s", "mail", "-w", secret)
        try sandbox.expectSilentSuccess("add-internet-password", "-a", "bob", "-s", "example.com", "-w", secret)
        let file = sandbox.directory.appendingPathComponent("file")
        try Data().write(to: file)
        let generic = ["add-generic-password", "-a", "bob", "-s", "mail", "-w", secret]
        let internet = ["add-internet-password", "-a", "bob", "-s", "example.com", "-w", secret]
        let failing: [(arguments: [String], status: Int32)] = [
            (generic + [sandbox.keychain], 45),  // errSecDuplicateItem
            (internet + [sandbox.keychain], 45),
            (generic + [file.appendingPathComponent("keychain.db").path], 220),  // errSecIO: under a regular file
            (["add-generic-password", "-a", "bob", "-w", secret, sandbox.keychain], 64),
            (internet + ["-P", "https", sandbox.keychain], 64),
            (internet + ["-r", "ftp", sandbox.keychain], 64),
            (generic + ["--bogus", sandbox.keychain], 64),
            (generic + [sandbox.keychain, "extra"], 64),
            (generic + ["--access-group", "", sandbox.keychain], 64),
        ]
        for (arguments, status) in failing {
            let run = try sandbox.run(arguments)
            #expect(run.status == status, "\(arguments)")
            #expect(!run.stderr.isEmpty, "\(arguments)")
            #expect(!run.stderr.contains(secret) && !run.stdout.contains(secret), "\(arguments)")
        }
    }

    @Test("bad flag values are ArgumentParser usage errors")
    func usageErrors() throws {
        let sandbox = try Sandbox()
        let port = try sandbox.security("find-internet-password", "-s", "example.com", "-P", "abc")
        #expect(port.status == 64 && port.stdout.isEmpty)
        #expect(port.stderr.hasPrefix("Error: The value 'abc' is invalid for '-P <port>'\n"))
        #expect(try sandbox.security("find-internet-password", "-s", "example.com", "-P", "65536").status == 64)
        let code = try sandbox.security("find-internet-password", "-r", "ftp")
        #expect(code.status == 64)
        #expect(
            code.stderr.hasPrefix(
                "Error: The value 'ftp' is invalid for '-r <protocol>': four-character types must be exactly 4 "
                    + "characters long (try \"ftp \" instead of \"ftp\")\n"))
        let conflict = try sandbox.run([
            "find-generic-password", "-a", "x", "--keychain", sandbox.keychain, "/other.db",
        ])
        #expect(conflict.status == 64)
        #expect(conflict.stderr.hasPrefix("Error: --keychain and the keychain argument name different keychains.\n"))
        let required = try sandbox.security("add-internet-password", "-a", "bob")
        #expect(required.status == 64)
        #expect(required.stderr.hasPrefix("Error: An account (-a) and a server (-s) are required.\n"))
    }

    @Test("-w prints hex when a byte of the password is not printable ASCII; -g prints it as macOS's print_buffer")
    func nonPrintablePassword() throws {
        let sandbox = try Sandbox()
        try sandbox.expectSilentSuccess("add-generic-password", "-a", "bob", "-s", "mail", "-w", "pässwörd\\")
        #expect(try sandbox.security("find-generic-password", "-a", "bob", "-w").stdout == "70c3a4737377c3b672645c\n")
        #expect(
            try sandbox.security("find-generic-password", "-a", "bob", "-g").stderr
                == "password: 0x70C3A4737377C3B672645C  \"p\\303\\244ssw\\303\\266rd\\134\"\n")
        // Without -w the password is empty: -w prints just the newline.
        try sandbox.expectSilentSuccess("add-generic-password", "-a", "empty", "-s", "mail")
        #expect(try sandbox.security("find-generic-password", "-a", "empty", "-w").stdout == "\n")
    }

    @Test("-w as the last option reads the password instead of taking it from the command line")
    func promptedPassword() throws {
        let sandbox = try Sandbox()
        let keychain = sandbox.keychain
        let piped = try sandbox.run(
            ["add-generic-password", "-a", "bob", "-s", "mail", keychain, "-w"], input: "piped secret\n")
        #expect(piped == Self.silent)
        #expect(try sandbox.security("find-generic-password", "-a", "bob", "-w").stdout == "piped secret\n")
        let internet = try sandbox.run(
            ["add-internet-password", "-a", "bob", "-s", "example.com", "-U", keychain, "-w"], input: "web")
        #expect(internet == Self.silent)
        #expect(try sandbox.security("find-internet-password", "-a", "bob", "-w").stdout == "web\n")
        #expect(
            try sandbox.run(["add-generic-password", "-a", "carol", "-s", "mail", keychain, "-w"])
                == Sandbox.Run(status: 1, stdout: "", stderr: "security: no password data on standard input\n"))
    }

    @Test(
        "without --keychain the environment's keychain and groups apply, else the XDG data directory and \"security\"")
    func defaults() throws {
        let sandbox = try Sandbox()
        let environment = [
            "SECURITYSERVICES_KEYCHAIN": sandbox.directory.appendingPathComponent("env.db").path,
            "SECURITYSERVICES_ACCESS_GROUPS": "team.one, team.two",
        ]
        let added = try sandbox.run(
            ["add-generic-password", "-a", "bob", "-s", "mail", "-w", "env"], environment: environment)
        #expect(added == Self.silent)
        let found = try sandbox.run(["find-generic-password", "-a", "bob"], environment: environment)
        #expect(found.stdout.hasPrefix("keychain: \"\(sandbox.directory.path)/env.db\"\n"))
        #expect(found.stdout.contains("    \"agrp\"<blob>=\"team.one\"\n"))

        #expect(try sandbox.run(["add-generic-password", "-a", "bob", "-s", "mail", "-w", "xdg"]) == Self.silent)
        let xdg = try sandbox.run(["find-generic-password", "-a", "bob", "-g"])
        #expect(xdg.stdout.hasPrefix("keychain: \"\(sandbox.directory.path)/xdg/securityservices/keychain.db\"\n"))
        #expect(xdg.stdout.contains("    \"agrp\"<blob>=\"security\"\n"))
        #expect(xdg.stderr == "password: \"xdg\"\n")
    }
}
