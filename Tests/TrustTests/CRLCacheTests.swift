import Foundation
import NetworkFetch
import TestVectors
import Testing

@testable import Trust

#if canImport(Glibc)
    import Glibc
#endif

/// The cache of fetched CRLs is bounded by what they cost in memory: a parsed CRL costs several times its DER, so a
/// bound on the DER alone lets hostile distribution points grow a process far past it.
@Suite("The CRL cache is bounded by what its CRLs cost in memory", .serialized, .hostOnly)
struct CRLCacheTests {
    /// A CRL of 20,000 entries, each with a reason code (about 1 MB of DER), signed by a CA made here: written as
    /// `openssl ca`'s database and signed by `openssl ca -gencrl`.
    static func largeCRL() throws -> Data {
        let ca = try OpenSSLCA("large-crl")
        try ca.issue("root", subject: "/CN=Large CRL Root", issuer: nil, extensions: OpenSSLCA.caExtensions(selfSigned: true))
        var index = ""
        for entry in 0..<20_000 {
            index += "R\t300101000000Z\t240101000000Z,keyCompromise\t\(String(format: "%08X%08X", 0x1000_0000 + entry, entry))\tunknown\t/CN=e\(entry)\n"
        }
        try ca.directory.write("index.txt", index)
        try ca.generateCRL("root")
        return try ca.directory.read("root.crl.der")
    }

    /// glibc's malloc_trim (not in the Glibc module): gives freed heap back to the system.
    static let trim: (@convention(c) (Int) -> Int32)? = dlsym(nil, "malloc_trim").map { unsafeBitCast($0, to: (@convention(c) (Int) -> Int32).self) }

    /// This process's resident memory, after giving freed heap back to the system.
    static func residentBytes() -> Int {
        _ = trim?(0)
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
            let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    @Test("100 distinct URLs serving a 20,000-entry CRL: the cache keeps what its bound allows, and the process grows by about that, not by every CRL")
    func boundedByCost() async throws {
        // Measured in a process of its own: the suite's other tests allocate beside it in this one.
        await #expect(processExitsWith: .success) {
            let failures = try await Self.measureBoundedByCost()
            for failure in failures { Issue.record(Comment(rawValue: failure)) }
            exit(failures.isEmpty ? EXIT_SUCCESS : EXIT_FAILURE)
        }
    }

    /// What the bounded-cost test checks, as failure messages (none when the bound holds).
    static func measureBoundedByCost() async throws -> [String] {
        var failures: [String] = []
        let der = try largeCRL()
        let server = try LoopbackHTTPServer(.answer { _ in LoopbackHTTPServer.Response(contentType: "application/pkix-crl", body: der) })
        let sample = try CertificateRevocationList(derEncoded: der)
        let estimate = sample.estimatedMemoryCost
        if estimate <= 4 * der.count { failures.append("the estimate counts the parsed form, not the DER alone: \(estimate) for \(der.count)") }

        // The control, and the estimate's check: holding parsed CRLs costs at most the estimate each, and much more
        // than their DER (so the measure below can fail).
        let before = residentBytes()
        let held = try (0..<20).map { _ in try CertificateRevocationList(derEncoded: der) }
        let perCRL = (residentBytes() - before) / held.count
        if perCRL <= 3 * der.count { failures.append("a parsed CRL costs several times its DER: \(perCRL) bytes each") }
        if perCRL > estimate { failures.append("the estimate is from above: \(perCRL) measured, \(estimate) estimated") }
        withExtendedLifetime(held) {}

        let cache = CRLCache()
        let time = Int(Date().timeIntervalSince1970)
        let start = residentBytes()
        for index in 0..<100 {
            let crl = try await cache.crl(
                at: server.url("/crl/\(index)"), time: time, fetching: (EvaluationNetwork(SocketFetcher.shared, time: nil), .seconds(10)),
                verified: { _ in true })
            if crl == nil { failures.append("CRL \(index) was not fetched") }
        }
        let grown = residentBytes() - start
        let usage = cache.usage
        if !(usage.bytes <= CRLCache.maximumBytes && usage.entries == CRLCache.maximumBytes / estimate) { failures.append("usage: \(usage)") }
        // What the cache holds, plus one CRL in flight and the allocator's slack (keeping every CRL would grow the
        // process by a hundred times one CRL's cost).
        if grown > CRLCache.maximumBytes + 16 << 20 {
            failures.append("the process grew by \(grown >> 20) MiB holding \(usage.entries) CRLs")
        }
        return failures
    }
}
