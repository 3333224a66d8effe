public import Foundation

/// The `openssl` command line: it makes test fixtures (keys, certificates, CAs, PKCS#12 files) and is the
/// independent truth the tests compare against. Shared by every test target.
public enum OpenSSLCLI {
    public struct Output: Sendable {
        public let status: Int32
        public let stdout: Data
        /// What openssl wrote on stderr (`req -verify` and `pkcs12 -info` report there).
        public let stderr: String
        public var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// Runs `openssl` with `arguments`, in `directory` when given, with standard input from /dev/null.
    public static func run(_ arguments: [String], in directory: URL? = nil) throws -> Output {
        try tool("/usr/bin/env", ["openssl"] + arguments, in: directory)
    }

    /// Runs any command-line tool the tests check against (`executable` with `arguments`, in `directory` when
    /// given, `environment` over this process's), with standard input from /dev/null.
    public static func tool(_ executable: String, _ arguments: [String], in directory: URL? = nil, environment: [String: String] = [:]) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // stderr is read on another thread so that neither pipe can fill up and block the child.
        let errors = PipeReader(err.fileHandleForReading)
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(status: process.terminationStatus, stdout: data, stderr: errors.text())
    }

    /// Runs `openssl` and requires success.
    /// - Throws: ``Failure`` naming the command, its status and its stderr.
    @discardableResult
    public static func require(_ arguments: [String], in directory: URL? = nil) throws -> Output {
        let output = try run(arguments, in: directory)
        guard output.status == 0 else {
            throw Failure("openssl \(arguments.joined(separator: " ")) exited \(output.status): \(output.stderr)")
        }
        return output
    }

    /// "AB:CD:…" (or "ABCD…") as bytes; nil for anything else.
    public static func hexBytes(_ text: some StringProtocol) -> Data? {
        let digits = String(text.filter { $0 != ":" && !$0.isWhitespace })
        guard digits.count % 2 == 0 else { return nil }
        var bytes = Data()
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            guard let byte = UInt8(digits[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }

    /// Reads a pipe to its end on a thread of its own.
    final class PipeReader: @unchecked Sendable {
        // @unchecked: `data` is written once by the reading thread and read only after `done` is signalled.
        private var data = Data()
        private let done = DispatchSemaphore(value: 0)
        init(_ handle: FileHandle) {
            Thread.detachNewThread { [self] in
                data = handle.readDataToEndOfFile()
                done.signal()
            }
        }
        func text() -> String {
            done.wait()
            return String(decoding: data, as: UTF8.self)
        }
    }
}

/// A temporary directory, removed when the value is released.
public final class TemporaryDirectory {
    public let url: URL
    public init(_ prefix: String) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }
    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    public func read(_ name: String) throws -> Data { try Data(contentsOf: url.appendingPathComponent(name)) }
    public func write(_ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: url.appendingPathComponent(name))
    }
}
