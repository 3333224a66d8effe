import Foundation

/// Reading the kernel's pseudo-files (`/proc/crypto`, `/proc/cpuinfo`, `/proc/interrupts`, …) whole.
///
/// They report a size of 0, and Foundation's `String(contentsOfFile:)` then reads one page and stops: measured here,
/// 4,021 of the 11,460 bytes of `/proc/crypto` — so every algorithm listed after the first page (the oldest
/// registrations, an engine's driver among them) went missing. A read loop to end of file gets all of it.
public enum ProcFile {
    /// The whole text of `path`, `nil` when it cannot be opened.
    public static func read(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.readToEnd() else { return "" }
        return String(decoding: data, as: UTF8.self)
    }
}
