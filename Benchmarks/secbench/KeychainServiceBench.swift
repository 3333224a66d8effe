import ArgumentParser
import CBaselines
import Foundation
import Keychain
import KeychainService
import Synchronization

/// The keychain service against the embedded keychain, in one run: generic passwords added and found through
/// `KeychainStore(service:)` (a `KeychainService` on a Unix socket in this process: the same wire, socket and
/// serving threads as `securityd`) and through an embedded `KeychainStore`, call by call alternating; a Unix-socket
/// round trip in C (the floor under any call to a service); finds per second from one client and from 64 clients at
/// once, with the processors they kept busy; and the memory 1,000 idle connections cost.
struct KeychainServiceBench {
    /// A service find costs at most this times an embedded find plus one socket round trip.
    static let maximumFindOverFloor = 1.3
    static let maximumAddRatio = 1.5
    /// 64 clients' finds per second against what the processors allow (processors ÷ CPU seconds per find, both
    /// measured in that run): the service must keep the processors busy with finds, not waiting.
    static let minimumCPUShare = 0.8
    static let clients = 64
    static let idleConnections = 1000
    static let maximumIdleBytes = 64 << 20

    struct Result: Encodable {
        let items: Int
        let add: Side
        let find: Side
        let oneClientFindsPerSecond: Double
        let manyClientsFindsPerSecond: Double
        let clients: Int
        /// Processors the one-client finds kept busy (process CPU time over wall time): the client's thread and the
        /// service's, working or polling (``FrameReader``). Where this nears the processors, 64 clients have little
        /// idle time left to fill.
        let oneClientBusyProcessors: Double
        let processors: Int
        /// One Unix-socket round trip of a find's size, in C, both sides polling.
        let roundTrip: LatencySummary
        /// CPU seconds of this process per find while 64 clients found at once.
        let manyClientsCPUSecondsPerFind: Double
        let idleConnections: Int
        /// What this process's resident memory grew by with ``idleConnections`` connections open and idle (both
        /// their ends: the service's and the clients').
        let idleConnectionBytes: Int

        /// The floor under a service find: an embedded find and one round trip.
        var findFloorMicroseconds: Double { find.embedded.p50Microseconds + roundTrip.p50Microseconds }
        var findOverFloor: Double { find.service.p50Microseconds / findFloorMicroseconds }
        /// Finds per second the processors allow at the measured CPU cost of a find.
        var cpuAllowedFindsPerSecond: Double { Double(processors) / manyClientsCPUSecondsPerFind }
        var cpuShare: Double { manyClientsFindsPerSecond / cpuAllowedFindsPerSecond }

        struct Side: Encodable {
            let service: LatencySummary
            let embedded: LatencySummary
            var ratio: Double { service.p50Microseconds / embedded.p50Microseconds }

            enum CodingKeys: String, CodingKey { case service, embedded, ratio = "ratio_p50" }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(service, forKey: .service)
                try container.encode(embedded, forKey: .embedded)
                try container.encode(ratio, forKey: .ratio)
            }
        }

        var concurrencyGain: Double { manyClientsFindsPerSecond / oneClientFindsPerSecond }

        func table() -> String {
            func line(_ name: String, _ side: Side) -> String {
                String(
                    format: "%-6@ %10.0f %9.1f %9.1f %10.0f %9.1f %9.1f %8.2f", name as NSString,
                    side.service.opsPerSecond, side.service.p50Microseconds, side.service.p99Microseconds,
                    side.embedded.opsPerSecond, side.embedded.p50Microseconds, side.embedded.p99Microseconds, side.ratio)
            }
            return [
                "keychain service: \(items) generic passwords through KeychainStore(service:) (a KeychainService on a Unix socket",
                "in this process) against an embedded KeychainStore, call by call alternating; latency in µs per call",
                "op      svc ops/s   svc p50   svc p99  emb ops/s   emb p50   emb p99  svc/emb",
                line("add", add),
                line("find", find),
                String(
                    format: "finds per second: one client %.0f, %d clients at once %.0f (%.1fx)", oneClientFindsPerSecond, clients,
                    manyClientsFindsPerSecond, concurrencyGain),
                String(
                    format: "one client kept %.2f of %d processors busy (its thread and the service's, working or polling for the other)",
                    oneClientBusyProcessors, processors),
                String(
                    format: "socket round trip (C, polling) p50 %.1f µs; floor under a service find (embedded find + round trip) %.1f µs",
                    roundTrip.p50Microseconds, findFloorMicroseconds),
                String(
                    format: "%d clients: %.1f µs of CPU a find, so %d processors allow %.0f finds/s; served %.0f (%.2f)", clients,
                    manyClientsCPUSecondsPerFind * 1e6, processors, cpuAllowedFindsPerSecond, manyClientsFindsPerSecond, cpuShare),
                String(format: "%d idle connections: %.1f MiB", idleConnections, Double(idleConnectionBytes) / 1_048_576),
            ].joined(separator: "\n")
        }

        func targets() -> String {
            func verdict(_ passed: Bool) -> String { passed ? "PASS" : "MISS" }
            let bench = KeychainServiceBench.self
            return [
                "  \(verdict(findOverFloor <= bench.maximumFindOverFloor))  service find p50 / (embedded find p50 + socket round trip p50) <= \(bench.maximumFindOverFloor): \(String(format: "%.2f", findOverFloor))",
                "  \(verdict(add.ratio <= bench.maximumAddRatio))  service add p50 / embedded add p50 <= \(bench.maximumAddRatio): \(String(format: "%.2f", add.ratio))",
                "  \(verdict(cpuShare >= bench.minimumCPUShare))  \(clients) clients' finds per second / what the processors allow >= \(bench.minimumCPUShare): \(String(format: "%.2f", cpuShare))",
                "  \(verdict(idleConnectionBytes <= bench.maximumIdleBytes))  \(idleConnections) idle connections <= \(bench.maximumIdleBytes >> 20) MiB: \(String(format: "%.1f", Double(idleConnectionBytes) / 1_048_576)) MiB",
            ].joined(separator: "\n")
        }
    }

    let items: Int

    func run() throws -> Result {
        let directory = try TemporaryDirectory(prefix: "secbench-service")
        defer { directory.remove() }
        let socket = directory.path + "/securityd.sock"
        // Room for the idle connections, all of this uid.
        let service = try KeychainService(
            .init(
                socketPath: socket, directory: directory.path + "/keychains", policyDirectories: [],
                maximumConnections: 4 * Self.idleConnections, maximumConnectionsPerUser: 2 * Self.idleConnections))
        service.start()
        defer { service.stop() }
        let remote = try KeychainStore(service: socket)
        let local = try KeychainStore(path: directory.path + "/embedded.db", accessGroups: ["secbench"])
        let items = KeychainBench.items(count: self.items)
        let clock = ContinuousClock()
        @Sendable func query(_ item: KeychainBench.Item) -> ItemQuery {
            ItemQuery(.genericPassword, matching: [.service: .string(item.service), .account: .string(item.account)], returning: .data)
        }
        func add(_ store: KeychainStore, _ item: KeychainBench.Item) throws {
            try store.add(
                .genericPassword, attributes: [.service: .string(item.service), .account: .string(item.account)],
                data: Data(item.password))
        }
        func find(_ store: KeychainStore, _ item: KeychainBench.Item) throws {
            guard try store.find(query(item)).first?.data.map(Array.init) == item.password else {
                throw ValidationError("another password came back for \(item.account)")
            }
        }
        func alternate(_ order: [Int], _ body: (KeychainStore, KeychainBench.Item) throws -> Void) throws -> ([Double], [Double]) {
            var service: [Double] = []
            var embedded: [Double] = []
            for (position, index) in order.enumerated() {
                let sides = position.isMultiple(of: 2) ? [(remote, true), (local, false)] : [(local, false), (remote, true)]
                for (store, isService) in sides {
                    let start = clock.now
                    try body(store, items[index])
                    let nanoseconds = (clock.now - start).nanoseconds
                    if isService { service.append(nanoseconds) } else { embedded.append(nanoseconds) }
                }
            }
            return (service, embedded)
        }
        var generator = SplitMix64(seed: 0x5EC_5E4D)
        let adds = try alternate(Array(items.indices), add)
        let finds = try alternate(Array(items.indices).shuffled(using: &generator), find)

        // Finds per second: one client for a fixed number of finds, then 64 connections at once, each its own
        // thread, the same number each.
        let perClient = max(50, min(400, self.items))
        let cpuBefore = Self.processCPUSeconds()
        let start = clock.now
        for index in 0..<perClient { try find(remote, items[index % items.count]) }
        let oneSeconds = Comparison.seconds(of: clock.now - start)
        let one = Double(perClient) / oneSeconds
        let busy = (Self.processCPUSeconds() - cpuBefore) / oneSeconds
        let stores = try (0..<Self.clients).map { _ in try KeychainStore(service: socket) }
        let failures = Atomic<Int>(0)
        let manyCPUBefore = Self.processCPUSeconds()
        let begin = clock.now
        let done = DispatchGroup()
        for (client, store) in stores.enumerated() {
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                for index in 0..<perClient {
                    let item = items[(client * 7 + index) % items.count]
                    if (try? store.find(query(item)).first?.data.map(Array.init)) != item.password {
                        failures.add(1, ordering: .relaxed)
                    }
                }
            }
        }
        done.wait()
        let many = Double(perClient * Self.clients) / Comparison.seconds(of: clock.now - begin)
        let cpuPerFind = (Self.processCPUSeconds() - manyCPUBefore) / Double(perClient * Self.clients)
        guard failures.load(ordering: .relaxed) == 0 else { throw ValidationError("concurrent finds returned other passwords") }

        // A socket round trip of a find's request size, in C.
        var roundTrips = [Double](repeating: 0, count: 20_000)
        guard cbaseline_socket_ping_pong(Int32(roundTrips.count), 128, &roundTrips) == 0 else {
            throw ValidationError("the socket round-trip baseline failed")
        }

        // Idle connections: each has said hello (so the service identified it) and then waits.
        let residentBefore = Self.residentBytes()
        var idle: [KeychainServiceClient] = []
        for _ in 0..<Self.idleConnections {
            let client = try KeychainServiceClient(socketPath: socket)
            _ = try client.call(.hello(requesting: []))
            idle.append(client)
        }
        let idleBytes = Self.residentBytes() - residentBefore
        idle.removeAll()
        return Result(
            items: self.items, add: .init(service: LatencySummary(adds.0), embedded: LatencySummary(adds.1)),
            find: .init(service: LatencySummary(finds.0), embedded: LatencySummary(finds.1)), oneClientFindsPerSecond: one,
            manyClientsFindsPerSecond: many, clients: Self.clients, oneClientBusyProcessors: busy,
            processors: ProcessInfo.processInfo.activeProcessorCount, roundTrip: LatencySummary(roundTrips),
            manyClientsCPUSecondsPerFind: cpuPerFind, idleConnections: Self.idleConnections, idleConnectionBytes: idleBytes)
    }

    /// This process's resident memory (`VmRSS`).
    static func residentBytes() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    /// User and system CPU time of every thread of this process.
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}
