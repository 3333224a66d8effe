import CBaselines
import Certificates
import Foundation
import Security
import Synchronization
import TLS

/// The TLS benchmark: `TLSConnection` (the Swift API, trust by the project's evaluator) against a libssl client
/// written in C with default verification, both fetching from one `openssl s_server -WWW` on loopback over TLS 1.3
/// with a P-256 chain: connections per second (each a handshake, a small page and the close; resumption off and
/// on), and bulk transfer of one large file. Alternating passes, medians.
struct TLSBench {
    static let minimumHandshakeRatio = 0.8
    static let minimumBulkRatio = 0.95
    static let bulkBytes = 8 << 20

    struct Row: Encodable {
        let name: String
        /// Microseconds per fetch.
        let ours: Double
        let opensslC: Double
        /// Our rate over C's (C time / ours).
        var ratio: Double { opensslC / ours }
        let target: Double
        enum CodingKeys: String, CodingKey { case name, ours = "us", opensslC = "openssl_c_us", ratio, target }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(ours, forKey: .ours)
            try container.encode(opensslC, forKey: .opensslC)
            try container.encode(ratio, forKey: .ratio)
            try container.encode(target, forKey: .target)
        }
    }

    let rounds: Int
    let budget: Duration

    func run() throws -> [Row] {
        let temporary = try TemporaryDirectory(prefix: "secbench-tls")
        defer { temporary.remove() }
        let directory = URL(fileURLWithPath: temporary.path)
        let (_, _, root) = try TrustBench.makeChain(in: directory)
        try Data(repeating: 0x61, count: 1024).write(to: directory.appendingPathComponent("page.html"))
        try Data((0..<Self.bulkBytes).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }).write(to: directory.appendingPathComponent("bulk.bin"))
        let server = try Server(in: directory)
        defer { server.stop() }
        let port = server.port

        let name = TrustBench.hostname
        let rootFile = directory.appendingPathComponent("root.pem").path
        var rows: [Row] = []
        for (label, resume) in [("connection, resumption off", false), ("connection, resumption on", true)] {
            guard let baseline = cbaseline_tls_new(rootFile, name, Int32(server.port), resume ? 1 : 0).map(Baseline.init) else {
                throw BenchFailure("no C TLS baseline")
            }
            defer { cbaseline_tls_free(baseline.pointer) }
            let configuration = TLSConfiguration(
                anchors: [root], serverName: name, sessionCache: resume ? TLSSessionCache() : nil)
            let ours = { @Sendable () async -> Bool in
                (await Self.fetch(port: port, "/page.html", configuration)).map { $0.bytes > 1024 && $0.reused == resume } ?? false
            }
            let theirs = { @Sendable () -> Bool in
                var resumed: Int32 = 0
                return cbaseline_tls_fetch(baseline.pointer, "/page.html", &resumed) > 1024 && (resumed == 1) == resume
            }
            let times = try Self.inTask(rounds: rounds, budget: budget, label: label, ours: ours, theirs: theirs)
            rows.append(Row(name: label, ours: times.ours, opensslC: times.theirs, target: Self.minimumHandshakeRatio))
        }
        // Secure Transport as an Apple client drives it: a blocking socket, break on server authentication, the
        // peer trust evaluated with the root as the anchor.
        guard let baseline = cbaseline_tls_new(rootFile, name, Int32(server.port), 0) else { throw BenchFailure("no C TLS baseline") }
        defer { cbaseline_tls_free(baseline) }
        let anchors = [SecCertificate(root)] as CFArray
        let viaSecureTransport = { (Self.secureTransportFetch(port: server.port, "/page.html", name: name, anchors: anchors) ?? 0) > 1024 }
        let theirsPage = {
            var resumed: Int32 = 0
            return cbaseline_tls_fetch(baseline, "/page.html", &resumed) > 1024
        }
        guard viaSecureTransport() else { throw BenchFailure("Secure Transport fails to fetch before timing") }
        let secureTransportTimes = Comparison.compare(rounds: rounds, budget: budget, ours: viaSecureTransport, theirs: theirsPage)
        rows.append(
            Row(name: "connection, Secure Transport", ours: secureTransportTimes.ours, opensslC: secureTransportTimes.theirs,
                target: Self.minimumHandshakeRatio))

        let configuration = TLSConfiguration(anchors: [root], serverName: name)
        let shared = Baseline(pointer: baseline)
        let ours = { @Sendable () async -> Bool in ((await Self.fetch(port: port, "/bulk.bin", configuration))?.bytes ?? 0) > Self.bulkBytes }
        let theirs = { @Sendable () -> Bool in
            var resumed: Int32 = 0
            return cbaseline_tls_fetch(shared.pointer, "/bulk.bin", &resumed) > Self.bulkBytes
        }
        let times = try Self.inTask(rounds: rounds, budget: budget * 4, label: "bulk", ours: ours, theirs: theirs)
        rows.append(Row(name: "bulk transfer, \(Self.bulkBytes >> 20) MiB", ours: times.ours, opensslC: times.theirs, target: Self.minimumBulkRatio))
        return rows
    }

    /// A C baseline shared with the task that times it. @unchecked: used by one side of one comparison at a time.
    struct Baseline: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    /// One connection through the Swift API, as an application's task makes it: the bytes received and whether it
    /// resumed.
    static func fetch(port: UInt16, _ path: String, _ configuration: TLSConfiguration) async -> (bytes: Int, reused: Bool)? {
        guard let connection = try? await TLSConnection.connect(host: "127.0.0.1", port: port, configuration: configuration)
        else { return nil }
        try? await connection.write(Array("GET \(path) HTTP/1.0\r\n\r\n".utf8))
        let bytes = (try? await connection.readToEnd(limit: 64 << 20))?.bytes.count ?? 0
        await connection.close()
        return (bytes, connection.sessionReused)
    }

    /// The comparison run inside one task (so the async side pays no task start or semaphore per call, as an
    /// application's own task would not): a warm-up and a check of each side, then `rounds` alternating passes,
    /// medians.
    static func inTask(
        rounds: Int, budget: Duration, label: String, ours: @escaping @Sendable () async -> Bool, theirs: @escaping @Sendable () -> Bool
    ) throws -> (ours: Double, theirs: Double) {
        let outcome = Mutex<(ours: Double, theirs: Double)?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            defer { done.signal() }
            // Warm both (a first session to resume) and check they do what is claimed.
            _ = await ours()
            _ = theirs()
            guard await ours(), theirs() else { return }
            let clock = ContinuousClock()
            func perCall(_ calls: Int, _ body: () async -> Void) async -> Double {
                let start = clock.now
                for _ in 0..<calls { await body() }
                return Comparison.seconds(of: clock.now - start) / Double(calls) * 1e6
            }
            let single = max(await perCall(1) { _ = await ours() }, await perCall(1) { _ = theirs() }, 1e-3)
            let calls = max(3, Int(Comparison.seconds(of: budget) * 1e6 / single))
            var ourTimes: [Double] = []
            var theirTimes: [Double] = []
            for round in 0..<rounds {
                for isOurs in round.isMultiple(of: 2) ? [true, false] : [false, true] {
                    if isOurs {
                        ourTimes.append(await perCall(calls) { _ = await ours() })
                    } else {
                        theirTimes.append(await perCall(calls) { _ = theirs() })
                    }
                }
            }
            outcome.withLock { $0 = (Comparison.median(ourTimes), Comparison.median(theirTimes)) }
        }
        done.wait()
        guard let result = outcome.withLock({ $0 }) else { throw BenchFailure("a side fails to fetch (\(label)) before timing") }
        return result
    }

    /// Connects `fd` to 127.0.0.1:`port`.
    static func connectLoopback(_ fd: Int32, _ port: UInt16) -> Bool {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// One connection through Secure Transport over a blocking socket: the bytes received.
    static func secureTransportFetch(port: UInt16, _ path: String, name: String, anchors: CFArray) -> Int? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        guard connectLoopback(fd, port), let context = SSLCreateContext(nil, .clientSide, .streamType) else { return nil }
        var descriptor = fd
        return withUnsafePointer(to: &descriptor) { connection -> Int? in
            _ = SSLSetIOFuncs(context, socketRead, socketWrite)
            _ = SSLSetConnection(context, UnsafeRawPointer(connection))
            _ = SSLSetPeerDomainName(context, name, name.utf8.count)
            _ = SSLSetSessionOption(context, .breakOnServerAuth, true)
            var status = SSLHandshake(context)
            if status == errSSLPeerAuthCompleted {
                var trust: SecTrust?
                guard SSLCopyPeerTrust(context, &trust) == errSecSuccess, let trust,
                    SecTrustSetAnchorCertificates(trust, anchors) == errSecSuccess, SecTrustEvaluateWithError(trust, nil)
                else { return nil }
                status = SSLHandshake(context)
            }
            guard status == errSecSuccess else { return nil }
            let request = Array("GET \(path) HTTP/1.0\r\n\r\n".utf8)
            var written = 0
            guard request.withUnsafeBytes({ SSLWrite(context, $0.baseAddress, $0.count, &written) }) == errSecSuccess else { return nil }
            var buffer = [UInt8](repeating: 0, count: 16384)
            var total = 0
            while true {
                var count = 0
                let read = buffer.withUnsafeMutableBytes { SSLRead(context, $0.baseAddress!, $0.count, &count) }
                total += count
                if read != errSecSuccess { break }
            }
            _ = SSLClose(context)
            return total
        }
    }

    static let socketRead: SSLReadFunc = { connection, data, length in
        let fd = connection.load(as: Int32.self)
        var done = 0
        while done < length.pointee {
            let count = recv(fd, data + done, length.pointee - done, 0)
            guard count > 0 else {
                length.pointee = done
                return count == 0 ? errSSLClosedGraceful : errSSLClosedAbort
            }
            done += count
        }
        return errSecSuccess
    }

    static let socketWrite: SSLWriteFunc = { connection, data, length in
        let fd = connection.load(as: Int32.self)
        var done = 0
        while done < length.pointee {
            let count = send(fd, data + done, length.pointee - done, Int32(MSG_NOSIGNAL))
            guard count > 0 else {
                length.pointee = done
                return errSSLClosedAbort
            }
            done += count
        }
        return errSecSuccess
    }

    /// `openssl s_server -WWW` serving the directory over TLS 1.3 on a free loopback port.
    final class Server {
        let port: UInt16
        private let process: Process

        /// Tries ports below the kernel's ephemeral range (32768 up, where the benchmark's own thousands of client
        /// connections sit, some in TIME_WAIT), a few times over: a port another process holds makes s_server exit.
        init(in directory: URL) throws {
            for _ in 0..<5 {
                let port = UInt16.random(in: 20_000...32_000)
                if let process = try Self.start(in: directory, port: port) {
                    self.port = port
                    self.process = process
                    return
                }
            }
            throw BenchFailure("openssl s_server did not start on any of five loopback ports")
        }

        /// s_server on `port`, once it accepts (within 5 s); nil when it exited first (the port was taken).
        private static func start(in directory: URL, port: UInt16) throws -> Process? {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = [
                "s_server", "-accept", "127.0.0.1:\(port)", "-cert", "leaf.pem", "-key", "leaf.key", "-cert_chain", "inter.pem",
                "-WWW", "-quiet", "-tls1_3",
            ]
            process.currentDirectoryURL = directory
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            for _ in 0..<100 {
                if Self.accepts(port), process.isRunning { return process }
                guard process.isRunning else { break }
                usleep(50_000)
            }
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            return nil
        }

        func stop() {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }

        static func accepts(_ port: UInt16) -> Bool {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            return connectLoopback(fd, port)
        }
    }
}

extension SecBench {
    /// `--tls`: the TLS benchmark alone.
    func runTLS() throws {
        let machine = Machine.current([])
        print(machine.summary)
        let bench = TLSBench(rounds: quick ? 5 : 9, budget: .milliseconds(budget ?? (quick ? 100 : 300)))
        let rows = try bench.run()
        var lines = [
            "tls: TLSConnection against a C libssl client with default verification, one openssl s_server -WWW on",
            "loopback, TLS 1.3, P-256 chain; a connection = handshake + GET of 1 KiB + close; median µs per fetch over",
            "\(bench.rounds) alternating rounds; ratio = C time / ours",
            "what                           ours µs   openssl-c µs   ratio  target",
        ]
        for row in rows {
            lines.append(
                row.name.padding(toLength: 28, withPad: " ", startingAt: 0)
                    + String(format: "%11.1f %14.1f %7.3f %7.2f", row.ours, row.opensslC, row.ratio, row.target))
        }
        if let bulk = rows.last {
            lines.append(
                String(
                    format: "bulk: ours %.0f MB/s, openssl-c %.0f MB/s", Double(TLSBench.bulkBytes) / bulk.ours,
                    Double(TLSBench.bulkBytes) / bulk.opensslC))
        }
        lines.append("targets (measured in this run):")
        for row in rows {
            lines.append("  \(row.ratio >= row.target ? "PASS" : "MISS")  \(row.name): ours / C rate >= \(row.target): " + String(format: "%.3f", row.ratio))
        }
        print(lines.joined(separator: "\n"))
        if let json {
            struct Document: Encodable {
                let machine: Machine
                let tls: [TLSBench.Row]
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(Document(machine: machine, tls: rows)).write(to: URL(fileURLWithPath: json))
            print("wrote \(json)")
        }
    }
}
