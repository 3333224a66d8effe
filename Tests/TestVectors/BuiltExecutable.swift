public import Foundation

/// The executables of the package that tests run as processes (a child, an application, a daemon): built beside the
/// test bundle by `swift build --build-tests` (and copied beside it into the AF_ALG VM).
public enum BuiltExecutable {
    /// The executable `name` beside the running test bundle.
    /// - Throws: ``Missing`` when it is not there.
    public static func named(_ name: String) throws -> URL {
        let bundle = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        let executable = bundle.deletingLastPathComponent().appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: executable.path) else { throw Missing(name: name, directory: bundle.deletingLastPathComponent().path) }
        return executable
    }

    /// Runs `executable` with `arguments`, `environment` added to this process's, standard error discarded: its exit
    /// status and standard output.
    public static func run(_ executable: URL, _ arguments: [String], environment: [String: String] = [:]) throws
        -> (status: Int32, stdout: String)
    {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    /// Writes `bytes` to `path` as an executable with `mode`, through a child (`cat`), so that this process never holds
    /// a descriptor open for writing on the file: a child that another test thread forks meanwhile would inherit it
    /// until its own exec, and executing the file then fails with "Text file busy" (ETXTBSY).
    public static func install(_ bytes: Data, at path: String, mode: mode_t = 0o755) throws {
        let cat = Process()
        cat.executableURL = URL(fileURLWithPath: "/bin/sh")
        cat.arguments = ["-c", "cat > \"$0\"", path]
        let input = Pipe()
        cat.standardInput = input
        try cat.run()
        try input.fileHandleForWriting.write(contentsOf: bytes)
        try input.fileHandleForWriting.close()
        cat.waitUntilExit()
        guard cat.terminationStatus == 0, chmod(path, mode) == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path]) }
    }

    public struct Missing: Error, CustomStringConvertible {
        public let name: String
        public let directory: String
        public var description: String { "\(name) is not built in \(directory): run swift build --build-tests" }
    }
}

/// Runs blocking test work (processes, sockets, many threads' calls) on a thread of its own and awaits its result:
/// the test holds none of the cooperative pool's threads (as many as CPUs, two here) while other suites' tasks
/// need them. Expectations belong after it, in the test's task.
public func onOwnThread<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
