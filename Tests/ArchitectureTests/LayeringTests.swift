import Foundation
import Testing

/// What each module may import is what `Package.swift` declares it depends on: every Swift file of every module
/// imports only its target's declared dependencies among the package's modules (the system's are free). SwiftPM
/// lets a module import any module built before it; this test does not.
@Suite(
    "Layering: every module imports only the dependencies Package.swift declares for it",
    .disabled(
        if: ProcessInfo.processInfo.environment["SECURITYSERVICES_REQUIRE_AFALG"] == "1",
        "host only: it reads the source tree, which the AF_ALG VM does not have"))
struct LayeringTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The files under `folders` (paths from the package root) whose extension is one of `extensions`.
    static func files(under folders: [String], extensions: Set<String>) -> [URL] {
        folders.flatMap { folder in
            (FileManager.default.enumerator(at: root.appendingPathComponent(folder), includingPropertiesForKeys: nil)?
                .compactMap { $0 as? URL } ?? []).filter { extensions.contains($0.pathExtension) }
        }
    }

    /// Target name → (its folder, its declared dependencies), read from `Package.swift`'s `.target(…)` and
    /// `.executableTarget(…)` entries (the dependency list's quoted names; a `.product(name:…)` gives its name).
    static func targets() throws -> [String: (path: String, dependencies: Set<String>)] {
        let manifest = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let entry = try Regex(#"\.(?:target|executableTarget)\(\s*name:\s*"(\w+)""#)
        let quoted = try Regex(#""([\w-]+)""#)
        var targets: [String: (path: String, dependencies: Set<String>)] = [:]
        for match in manifest.matches(of: entry) {
            guard let name = match.output[1].substring.map(String.init) else { continue }
            // The entry runs to its closing parenthesis.
            var depth = 0
            var end = match.range.lowerBound
            for index in manifest[match.range.lowerBound...].indices {
                if manifest[index] == "(" { depth += 1 }
                if manifest[index] == ")" { depth -= 1; if depth == 0 { end = index; break } }
            }
            let body = manifest[match.range.upperBound..<end]
            var dependencies: Set<String> = []
            if let list = body.range(of: "dependencies:"), let open = body[list.upperBound...].firstIndex(of: "[") {
                var level = 0
                var close = open
                for index in body[open...].indices {
                    if body[index] == "[" { level += 1 }
                    if body[index] == "]" { level -= 1; if level == 0 { close = index; break } }
                }
                dependencies = Set(body[open...close].matches(of: quoted).compactMap { $0.output[1].substring.map(String.init) })
            }
            let path = body.firstMatch(of: try Regex(#"path:\s*"([^"]+)""#))?.output[1].substring.map(String.init)
            targets[name] = (path ?? "Sources/\(name)", dependencies)
        }
        return targets
    }

    @Test("each module's Swift files import only the package modules its target declares")
    func importsFollowThePackage() throws {
        let targets = try Self.targets()
        #expect(targets.count >= 25, "Package.swift lists \(targets.count) targets")
        let known = Set(targets.keys).union(["ArgumentParser"])
        let importLine = try Regex(#"^\s*(?:@\w+\s+)*(?:(?:public|package|internal|private|fileprivate)\s+)?import\s+(\w+)"#)
        var checked = 0
        for (module, target) in targets.sorted(by: { $0.key < $1.key }) {
            for file in Self.files(under: [target.path], extensions: ["swift"]) {
                for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
                    guard let match = try importLine.firstMatch(in: String(line)), let name = match.output[1].substring
                    else { continue }
                    let imported = String(name)
                    guard known.contains(imported), imported != module else { continue }
                    checked += 1
                    #expect(target.dependencies.contains(imported), "\(file.lastPathComponent) (\(module)) imports \(imported), which Package.swift does not declare")
                }
            }
        }
        #expect(checked > 50)
    }

    /// The layers, as docs/architecture.md draws them, lowest first: a module depends only on modules of lower
    /// layers (the C modules and the test support are outside them).
    static let layers: [[String]] = [
        ["SecurityBase"],
        ["CryptoContract", "DurableFiles", "NetworkFetch", "KeychainModel"],
        ["SoftwareBackend", "KernelBackend", "Entropy", "Certificates", "KeychainWire"],
        ["CryptoDispatcher", "Trust", "HardwareKeys"],
        ["Cryptography", "TLS"],
        ["CommonCryptoAdapter", "Keychain"],
        ["KeychainItems", "LocalAuthentication"],
        ["KeychainService", "CertificateManager", "Security"],
        ["SecurityCommand", "securityd"],
    ]

    @Test("no module depends on a module of a higher layer")
    func layersPointDown() throws {
        let targets = try Self.targets()
        let layer = Dictionary(uniqueKeysWithValues: Self.layers.enumerated().flatMap { index, names in names.map { ($0, index) } })
        for (module, target) in targets {
            guard let own = layer[module] else { continue }
            for dependency in target.dependencies {
                guard let other = layer[dependency] else { continue }
                #expect(other < own, "\(module) (layer \(own)) depends on \(dependency) (layer \(other))")
            }
        }
    }

    @Test("trust evaluation, network fetches, TLS connections and the certificate manager wait for no I/O on a thread: no semaphore, no blocking fetch, no poll, no queue hop; the one synchronous wait is NetworkExecutor.wait")
    func oneIOModel() throws {
        let blocking = try Regex(#"DispatchSemaphore|fetchBlocking|DispatchQueue\.global\(\)|\.wait\(\)|Thread\.sleep|usleep\(|\bpoll\(|SO_RCVTIMEO|SO_SNDTIMEO"#)
        for file in Self.files(under: ["Sources/Trust", "Sources/NetworkFetch", "Sources/TLS", "Sources/CertificateManager"], extensions: ["swift"]) {
            let text = try String(contentsOf: file, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.contains(blocking) && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                let allowed = file.lastPathComponent == "NetworkFetching.swift"
                    && (line.contains("let done = DispatchSemaphore(value: 0)") || line.contains("done.wait()"))
                #expect(allowed, "\(file.lastPathComponent):\(number + 1) waits on a thread: \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
    }

    @Test("every error type of the package has the one skeleton (CodedError: code, reason, source location), except Apple's own LAError")
    func oneErrorSkeleton() throws {
        let declaration = try Regex(#"(?:struct|enum|class)\s+(\w+)\s*:\s*([^{]*)\{"#)
        for file in Self.files(under: ["Sources", "Backends"], extensions: ["swift"]) {
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in text.matches(of: declaration) {
                let name = String(match.output[1].substring ?? "")
                let conformances = (match.output[2].substring ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                guard conformances.contains("Error"), name != "LAError" else { continue }
                Issue.record("\(file.lastPathComponent): \(name) is an Error without the CodedError skeleton")
            }
        }
    }
}
