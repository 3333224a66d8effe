import Foundation
import NetworkFetch
import Synchronization
import TestVectors
import Testing

/// A one-shot server for answers LoopbackHTTPServer never gives: it reads the request head (and a
/// Content-Length body), then writes `answer` as given, in pieces with `pause` between them, and closes.
final class RawServer: @unchecked Sendable {
    // @unchecked: `listener` is set in init and closed in deinit; the serving thread only uses its copy.
    let port: UInt16
    private let listener: Int32

    init(pieces: [[UInt8]], pause: Duration = .zero) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(fd >= 0 && bound == 0 && listen(fd, 4) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        Thread.detachNewThread {
            let connection = accept(fd, nil, nil)
            guard connection >= 0 else { return }
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !received.isEmpty == false || String(decoding: received, as: UTF8.self).range(of: "\r\n\r\n") == nil {
                let count = read(connection, &buffer, buffer.count)
                if count <= 0 { break }
                received += buffer[..<count]
            }
            for piece in pieces {
                _ = piece.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
                if pause > .zero { Thread.sleep(forTimeInterval: Double(pause.components.attoseconds) / 1e18 + Double(pause.components.seconds)) }
            }
            close(connection)
        }
    }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    var url: String { "http://127.0.0.1:\(port)/raw" }
}

@Suite("SocketFetcher: HTTP for OCSP, CRLs, caIssuers and SCEP, against loopback peers", .serialized, .hostOnly)
struct SocketFetcherTests {
    let fetcher = SocketFetcher()

    func expectFailure(_ kind: FetchError.Kind, _ request: FetchRequest, sourceLocation: SourceLocation = #_sourceLocation) async -> FetchError? {
        do throws(FetchError) {
            let body = try await fetcher.fetch(request)
            Issue.record("expected \(kind), got \(body.count) bytes", sourceLocation: sourceLocation)
            return nil
        } catch {
            #expect(error.kind == kind, sourceLocation: sourceLocation)
            return error
        }
    }

    @Test("GET: the path and query reach the server as given, the body comes back whole; the Host header names the port")
    func get() async throws {
        let seen = Mutex<[String]>([])
        let body = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0) })
        let server = try LoopbackHTTPServer(.answer { request in
            seen.withLock { $0.append("\(request.method) \(request.path)") }
            return .init(body: body)
        })
        let answer = try await fetcher.fetch(FetchRequest(url: server.url("/a/b%2Fc?operation=GetCACert&message=x%2By")))
        #expect(answer == Array(body))
        #expect(seen.withLock { $0 } == ["GET /a/b%2Fc?operation=GetCACert&message=x%2By"])
    }

    @Test("POST: the body and its length reach the server; localhost resolves through the system resolver")
    func post() async throws {
        let server = try LoopbackHTTPServer(.answer { request in .init(body: Data(request.method.utf8) + request.body) })
        let payload = Array("ocsp request bytes".utf8)
        let answer = try await fetcher.fetch(
            FetchRequest(url: "http://localhost:\(server.port)/ocsp", body: payload, contentType: "application/ocsp-request"))
        #expect(answer == Array("POST".utf8) + payload)
    }

    @Test("an HTTP error status is .status with the code")
    func status() async throws {
        let server = try LoopbackHTTPServer(.answer { _ in .notFound })
        let error = await expectFailure(.status, FetchRequest(url: server.url("/missing")))
        #expect(error?.detail == 404)
    }

    @Test("a closed port is .unreachable with ECONNREFUSED, at once")
    func refused() async throws {
        let port = try LoopbackHTTPServer(.silent).port  // released at once: the port is closed again
        // ECONNREFUSED, not .timeout: the refusal ended the fetch, not its 30 s deadline.
        let error = await expectFailure(.unreachable, FetchRequest(url: "http://127.0.0.1:\(port)/", timeout: .seconds(30)))
        #expect(error?.detail == ECONNREFUSED)
    }

    @Test("a server that accepts and never answers: .timeout when the timeout passes, not later")
    func silent() async throws {
        let server = try LoopbackHTTPServer(.silent)
        let clock = ContinuousClock()
        let elapsed = await clock.measure {
            _ = await expectFailure(.timeout, FetchRequest(url: server.url("/"), timeout: .milliseconds(400)))
        }
        // Not before the deadline; the upper bound only proves it came at all (the server never answers), with room
        // for this task to wait on a cooperative pool the full suite's synchronous tests hold (33 s has been seen).
        #expect(elapsed >= .milliseconds(380) && elapsed < .seconds(90))
    }

    @Test("name resolution that hangs is bounded by the same timeout (getaddrinfo is abandoned, not waited for)")
    func resolutionTimeout() async throws {
        // The resolver hangs until the test lets it go, which it does only once the fetch has answered: a fetch that
        // waited for the resolver would see it return (after its own 120 s) before answering. An order, not a time:
        // under the full suite this task has been seen to resume 33 s after the fetch had timed out.
        let release = DispatchSemaphore(value: 0)
        let resolverReturned = Atomic<Bool>(false)
        let hanging = SocketFetcher { _, _ in
            _ = release.wait(timeout: .now() + 120)
            resolverReturned.store(true, ordering: .sequentiallyConsistent)
            return .failure(FetchError(.unresolved))
        }
        do throws(FetchError) {
            _ = try await hanging.fetch(FetchRequest(url: "http://ocsp.example/", timeout: .milliseconds(300)))
            Issue.record("a hanging resolver answered")
        } catch {
            #expect(error.kind == .timeout)
        }
        let waited = resolverReturned.load(ordering: .sequentiallyConsistent)
        #expect(!waited, "the fetch waited for the resolver")
        release.signal()
    }

    @Test("cancelling the task ends a fetch that waits, with .cancelled")
    func cancellation() async throws {
        let server = try LoopbackHTTPServer(.silent)
        let fetcher = self.fetcher
        let task = Task { () async -> FetchError? in
            do throws(FetchError) {
                _ = try await fetcher.fetch(FetchRequest(url: server.url("/"), timeout: .seconds(30)))
                return nil
            } catch {
                return error
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        task.cancel()
        // .cancelled, not .timeout: the cancellation ended the fetch, not its 30 s deadline.
        let error = await task.value
        #expect(error?.kind == .cancelled)
    }

    @Test("an answer longer than the request allows is .tooLarge, by Content-Length or by bytes read")
    func tooLarge() async throws {
        let server = try LoopbackHTTPServer(.answer { _ in .init(body: Data(count: 5000)) })
        _ = await expectFailure(.tooLarge, FetchRequest(url: server.url("/"), maximumLength: 4999))
        let unbounded = try RawServer(pieces: [Array("HTTP/1.0 200 OK\r\n\r\n".utf8), [UInt8](repeating: 1, count: 5000)])
        _ = await expectFailure(.tooLarge, FetchRequest(url: unbounded.url, maximumLength: 4999))
    }

    @Test("raw answers: chunked bodies decoded, a body cut short or a close before any answer is .unreachable, garbage .malformed")
    func rawAnswers() async throws {
        let chunked = try RawServer(
            pieces: [Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n".utf8), Array("6;x=y\r\n world\r\n0\r\n\r\n".utf8)],
            pause: .milliseconds(50))
        #expect(try await fetcher.fetch(FetchRequest(url: chunked.url)) == Array("hello world".utf8))
        let toEOF = try RawServer(pieces: [Array("HTTP/1.0 200 OK\r\nContent-Type: x\r\n\r\nuntil the end".utf8)])
        #expect(try await fetcher.fetch(FetchRequest(url: toEOF.url)) == Array("until the end".utf8))
        let short = try RawServer(pieces: [Array("HTTP/1.0 200 OK\r\nContent-Length: 100\r\n\r\nonly this".utf8)])
        _ = await expectFailure(.unreachable, FetchRequest(url: short.url))
        let nothing = try RawServer(pieces: [])
        _ = await expectFailure(.unreachable, FetchRequest(url: nothing.url))
        let garbage = try RawServer(pieces: [Array("SSH-2.0-OpenSSH\r\n\r\n".utf8)])
        _ = await expectFailure(.malformed, FetchRequest(url: garbage.url))
        let conflicting = try RawServer(pieces: [Array("HTTP/1.0 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd".utf8)])
        _ = await expectFailure(.malformed, FetchRequest(url: conflicting.url))
    }

    @Test("URLs that are not plain http:// with a host are .badURL before any connection", arguments: [
        "https://example.com/", "ftp://example.com/", "http://", "http:///path", "http://user@example.com/",
        "http://example.com:0/", "http://example.com:70000/", "http://[::1/", "http://exa mple.com/", "example.com",
    ])
    func badURLs(_ url: String) async {
        _ = await expectFailure(.badURL, FetchRequest(url: url))
    }

    @Test("synchronous waits from many cooperative-pool threads at once: every fetch completes (the fetch does not need the pool)")
    func blockingFromThePool() async throws {
        let server = try LoopbackHTTPServer(.answer { request in
            Thread.sleep(forTimeInterval: 0.05)
            return .init(body: Data(request.path.utf8))
        })
        let fetcher = self.fetcher
        let answers = await withTaskGroup(of: String.self) { group in
            for index in 0..<8 {
                group.addTask {
                    let body = try? NetworkExecutor.wait { try await fetcher.fetch(FetchRequest(url: server.url("/\(index)"), timeout: .seconds(20))) }
                    return String(decoding: body ?? [], as: UTF8.self)
                }
            }
            return await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(answers == Set((0..<8).map { "/\($0)" }))
    }
}
