import Foundation
import Testing

/// The README's table of what each module may import is the layer diagram in checkable form: every Swift file of
/// every module listed imports only what its row allows (modules of this package; the system's are free).
@Suite(
    "Layering: every module imports only what the README's table allows",
    .disabled(
        if: ProcessInfo.processInfo.environment["SECURITYSERVICES_REQUIRE_AFALG"] == "1",
        "host only: it reads the source tree, which the AF_ALG VM does not have"))
struct LayeringTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The package's own module names: the folders of Sources/ and Backends/, and the argument parser.
    static func packageModules() throws -> Set<String> {
        var names: Set<String> = ["ArgumentParser"]
        for folder in ["Sources", "Backends"] {
            names.formUnion(try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(folder).path))
        }
        return names
    }

    /// Module → the modules its row allows, from the table after the README's layers marker.
    static func table(known: Set<String>) throws -> [String: Set<String>] {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let marker = try #require(readme.range(of: "<!-- layers: checked by ArchitectureTests"))
        var rows: [String: Set<String>] = [:]
        for line in readme[marker.upperBound...].split(separator: "\n").dropFirst(3) {
            guard line.hasPrefix("| ") else { break }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2 else { continue }
            func names(_ cell: String) -> [String] {
                // The allowed list ends at a dash, where an explanation starts (which may name a module not allowed).
                let list = cell.components(separatedBy: " — ")[0]
                return list.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).map(String.init).filter(known.contains)
            }
            for module in names(cells[0]) { rows[module] = Set(names(cells[1])) }
        }
        return rows
    }

    @Test("each listed module's Swift files import only the modules of its row")
    func importsFollowTheTable() throws {
        let known = try Self.packageModules()
        let table = try Self.table(known: known)
        #expect(table.count >= 18, "the table lists \(table.count) modules")
        let importLine = try Regex(#"^\s*(?:@\w+\s+)*(?:(?:public|package|internal|private|fileprivate)\s+)?import\s+(\w+)"#)
        var checked = 0
        for (module, allowed) in table.sorted(by: { $0.key < $1.key }) {
            let folder = ["Sources", "Backends"].map { Self.root.appendingPathComponent($0).appendingPathComponent(module) }
                .first { FileManager.default.fileExists(atPath: $0.path) }
            let directory = try #require(folder, "\(module) has no folder")
            let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)?
                .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
            for file in files {
                for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
                    guard let match = try importLine.firstMatch(in: String(line)), let name = match.output[1].substring
                    else { continue }
                    let imported = String(name)
                    guard known.contains(imported), imported != module else { continue }
                    checked += 1
                    #expect(allowed.contains(imported), "\(file.lastPathComponent) (\(module)) imports \(imported)")
                }
            }
        }
        #expect(checked > 50)
    }
}
