import Foundation
import Glibc

/// security(1)'s "specify -w as the last option to be prompted": the password is then read from the terminal,
/// without echo and twice, instead of from the command line (where other users' `ps` can see it).
///
/// ArgumentParser has no option whose value may be missing, so before parsing a trailing `-w` of an add command
/// becomes the hidden flag `--prompt-for-password` (``flagName``).
enum PasswordPrompt {
    static let flagName = "prompt-for-password"
    private static let commands: Set<String> = ["add-generic-password", "add-internet-password"]

    static func markTrailingPasswordFlag(in arguments: inout [String]) {
        guard arguments.count > 1, let command = arguments.first, commands.contains(command), arguments.last == "-w"
        else { return }
        arguments[arguments.count - 1] = "--" + flagName
    }

    /// Reads the new item's password: on a terminal, macOS's two prompts without echo (three tries); otherwise
    /// one line of standard input, so `printf '%s\n' "$secret" | security add-generic-password … -w` works.
    /// - Throws: ``Failure`` when no password could be read or the two entries never matched.
    static func read(prompt: String = "password data for new item: ", retype: String = "retype password for new item: ") throws -> Data {
        try fromTerminalOrInput(missing: "no password data on standard input") { descriptor in
            for _ in 0..<3 {
                guard let first = readSilently(descriptor, prompt: prompt),
                    let second = readSilently(descriptor, prompt: retype)
                else { break }
                if first == second { return first }
                write(descriptor, "passwords don't match\n")
            }
            throw Failure(reason: "no password was entered")
        }
    }

    /// Reads one secret that is not retyped (an enrollment's challenge password): on a terminal, `prompt` without
    /// echo; otherwise one line of standard input.
    /// - Throws: ``Failure`` when nothing could be read.
    static func readOnce(prompt: String) throws -> Data {
        try fromTerminalOrInput(missing: "no \(prompt) on standard input") { descriptor in
            guard let secret = readSilently(descriptor, prompt: "\(prompt): ") else {
                throw Failure(reason: "no \(prompt) was entered")
            }
            return secret
        }
    }

    /// Standard input's first line when it is not a terminal (a ``Failure`` saying `missing` without one); else
    /// `prompting` with the terminal (`/dev/tty`, else standard input).
    private static func fromTerminalOrInput(missing: String, _ prompting: (Int32) throws -> Data) throws -> Data {
        guard isatty(STDIN_FILENO) == 1 else {
            guard let line = readLine(from: STDIN_FILENO) else { throw Failure(reason: missing) }
            return line
        }
        let terminal = open("/dev/tty", O_RDWR | O_CLOEXEC)
        let descriptor = terminal >= 0 ? terminal : STDIN_FILENO
        defer { if terminal >= 0 { close(terminal) } }
        return try prompting(descriptor)
    }

    /// Reads an existing secret's password (a PKCS#12 file's), asked once: on a terminal one prompt without echo;
    /// otherwise one line of standard input (an empty line is the empty password).
    /// - Throws: ``Failure`` when no password could be read.
    static func readOne(prompt: String) throws -> String {
        let line: Data?
        if isatty(STDIN_FILENO) == 1 {
            let terminal = open("/dev/tty", O_RDWR | O_CLOEXEC)
            defer { if terminal >= 0 { close(terminal) } }
            line = readSilently(terminal >= 0 ? terminal : STDIN_FILENO, prompt: prompt)
        } else {
            line = readLine(from: STDIN_FILENO)
        }
        guard let line else { throw Failure(reason: "no password was entered") }
        return String(decoding: line, as: UTF8.self)
    }

    /// One line from `descriptor` with echo off, the terminal's settings restored after.
    private static func readSilently(_ descriptor: Int32, prompt: String) -> Data? {
        write(descriptor, prompt)
        var original = termios()
        let isTerminal = tcgetattr(descriptor, &original) == 0
        if isTerminal {
            // tcsetattr(3): TCSAFLUSH applies the change once pending output is written and discards input not yet
            // read, so nothing typed before the prompt is taken as the password.
            var silent = original
            silent.c_lflag &= ~tcflag_t(ECHO)
            _ = tcsetattr(descriptor, TCSAFLUSH, &silent)
        }
        defer {
            if isTerminal { _ = tcsetattr(descriptor, TCSAFLUSH, &original) }
            write(descriptor, "\n")
        }
        return readLine(from: descriptor)
    }

    /// Bytes up to a newline (not included, nor a carriage return before it); nil at end of input with none.
    private static func readLine(from descriptor: Int32) -> Data? {
        var line = Data()
        var byte: UInt8 = 0
        while true {
            let count = Glibc.read(descriptor, &byte, 1)
            if count < 0, errno == EINTR { continue }
            if count <= 0 { return line.isEmpty ? nil : line }
            if byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        return line
    }

    private static func write(_ descriptor: Int32, _ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0, errno == EINTR { continue }
            if written <= 0 { return }
            bytes = bytes.dropFirst(written)
        }
    }
}
