import Foundation
import FuzzTargets

#if FUZZING
// Built by `make fuzz` with -sanitize=fuzzer,address: libFuzzer runs the target SECURITYSERVICES_FUZZ_TARGET names.
// SwiftPM links an executable's entry point under its own name, so the entry is this @main, which hands the
// command line to libFuzzer's driver.

/// libFuzzer's driver (compiler-rt, FuzzerInterface.h): parses libFuzzer's flags and runs `callback` on inputs.
/// Declared here rather than through a C module: its parameters are pointers and an int, which Swift passes as C
/// does on the platforms this builds for.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The target this process fuzzes, read once.
let selected: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["SECURITYSERVICES_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget.named(name) else {
        FileHandle.standardError.write(Data("SECURITYSERVICES_FUZZ_TARGET names no target: \(FuzzTarget.all.map(\.name))\n".utf8))
        exit(2)
    }
    return target
}()

/// libFuzzer's entry for one input (its library refers to it by this name).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    selected.run(data.map { Data(bytes: $0, count: size) } ?? Data())
    return 0
}

@main
enum SecurityFuzz {
    static func main() {
        _ = selected
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzTestOneInput))
    }
}
#else
/// Without the fuzzer: `securityfuzz list`, `securityfuzz seeds DIRECTORY` (each target's generated seeds, one
/// folder a target) and `securityfuzz run TARGET FILE…` (each file through the target once: the regression check).
@main
enum SecurityFuzz {
    static func main() throws {
        let arguments = CommandLine.arguments.dropFirst()
        switch arguments.first {
        case "list":
            for target in FuzzTarget.all { print("\(target.name)\t\(target.summary)") }
        case "seeds":
            guard let directory = arguments.dropFirst().first else { return usage() }
            for target in FuzzTarget.all {
                let folder = URL(fileURLWithPath: directory).appendingPathComponent(target.name)
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                for (index, seed) in target.seeds().enumerated() {
                    try seed.write(to: folder.appendingPathComponent("seed-\(index)"))
                }
            }
        case "bounds":
            // Failing calls in a loop, the process's descriptors and resident memory before and
            // after (a warm-up first, for lazily made caches). Prints one line a target.
            let count = arguments.dropFirst().first.flatMap { Int($0) } ?? 100_000
            let garbage = Data((0..<96).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })
            for target in FuzzTarget.all {
                // Failing inputs: bytes that are nothing, and the target's seeds cut in half (which fail deeper in).
                let inputs = [garbage] + target.seeds().map { Data($0.prefix($0.count / 2)) }
                // The file-reading targets make a file (and a keychain) a call, and an OCSP call evaluates a trust
                // (0.6 ms): a hundredth as many. An import of bytes of no known format runs OpenSSL's decoder search
                // (about 1 ms), a SCEP call opens PKCS#7 (0.4 ms): a tenth.
                let shares = ["trust-settings": 100, "dispatch-profile": 100, "keychain-backup": 100, "ocsp": 100, "item-import": 10, "scep": 10]
                let share = shares[target.name] ?? 1
                let calls = max(count / share, 1)
                for call in 0..<min(calls, 1_000) { target.run(inputs[call % inputs.count]) }
                let before = ResourceUse.now()
                let started = ContinuousClock.now
                for call in 0..<calls { target.run(inputs[call % inputs.count]) }
                let elapsed = ContinuousClock.now - started
                let after = ResourceUse.now()
                print("\(target.name)\tcalls \(calls)\tfds \(before.descriptors) \(after.descriptors)\trss \(before.residentBytes) \(after.residentBytes)\ttime \(elapsed)")
            }
        case "run":
            let rest = Array(arguments.dropFirst())
            guard let name = rest.first, let target = FuzzTarget.named(name) else { return usage() }
            for path in rest.dropFirst() {
                target.run(try Data(contentsOf: URL(fileURLWithPath: path)))
            }
            print("\(name): \(rest.count - 1) inputs, no crash")
        default:
            usage()
        }
    }

    static func usage() {
        FileHandle.standardError.write(Data("usage: securityfuzz list | seeds DIRECTORY | run TARGET FILE… | bounds [CALLS]\n".utf8))
        exit(2)
    }
}

/// The process's open descriptors and resident memory, from /proc.
struct ResourceUse {
    let descriptors: Int
    let residentBytes: Int

    static func now() -> ResourceUse {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
        // statm: size resident shared text lib data dt, in pages.
        let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
        let pages = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? -1
        return ResourceUse(descriptors: descriptors, residentBytes: pages * Int(sysconf(Int32(_SC_PAGESIZE))))
    }
}
#endif
