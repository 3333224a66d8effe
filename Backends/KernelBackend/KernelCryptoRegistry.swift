import Foundation

/// What `/proc/crypto` says about the kernel's algorithms: for each name (`cbc(aes)`, `sha1`, …) the driver
/// that serves it (the highest-priority one whose self-test passed).
///
/// The driver tells CPU code from an engine: `cbc-aes-aesni`, `sha1-generic`, `sha256-ssse3`, `aes-lib` are
/// instructions on the same CPU OpenSSL uses (plus a syscall and a copy: AF_ALG cannot win there), while
/// `mv-cbc-aes`, `cbc-aes-caam`, `eip93-cbc-aes` name an off-CPU engine that may.
public struct KernelCryptoRegistry: Sendable {
    public struct Entry: Sendable, Hashable {
        public let name: String
        public let driver: String
        public let module: String
        public let priority: Int
        public let type: String
    }

    /// Best entry per algorithm name.
    public let entries: [String: Entry]

    /// Reads `/proc/crypto` (an empty registry where it cannot be read).
    public static func current() -> KernelCryptoRegistry {
        let text = ProcFile.read("/proc/crypto") ?? ""
        return KernelCryptoRegistry(parsing: text)
    }

    public init(parsing text: String) {
        var best: [String: Entry] = [:]
        for block in text.components(separatedBy: "\n\n") {
            var fields: [String: String] = [:]
            for line in block.split(whereSeparator: \.isNewline) {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let key = line[..<colon].trimmingCharacters(in: .whitespaces)
                fields[key] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            guard let name = fields["name"], let driver = fields["driver"] else { continue }
            if let selftest = fields["selftest"], selftest != "passed" { continue }
            if fields["internal"] == "yes" { continue }
            let entry = Entry(
                name: name, driver: driver, module: fields["module"] ?? "", priority: Int(fields["priority"] ?? "") ?? 0,
                type: fields["type"] ?? "")
            if let existing = best[name], existing.priority >= entry.priority { continue }
            best[name] = entry
        }
        entries = best
    }

    public func driver(for kernelName: String) -> String? { entries[kernelName]?.driver }

    /// Driver-name parts of off-CPU engines: virtio-crypto (a hypervisor's device, as in the engine test
    /// lanes), Intel QAT, AMD CCP, NXP CAAM/SAHARA/DCP, Marvell CESA and OcteonTX CPT, Inside Secure
    /// SafeXcel/EIP, Allwinner's CE/SS, Qualcomm QCE, Rockchip, Amlogic, Samsung, TI, Atmel, Freescale talitos,
    /// HiSilicon, Arm CryptoCell, STM32, Chelsio, Cavium Nitrox, IBM NX. They win over the CPU markers below
    /// (`sun8i-ce` is an engine, not Arm's Crypto Extensions).
    static let engineDriverMarkers = [
        "virtio_crypto", "qat", "ccp-", "caam", "sahara", "mxs-dcp", "mv-", "mv_", "cpt", "safexcel", "eip",
        "sun4i-ss", "sun8i-ce", "sun8i-ss", "qce", "rk-", "rk3", "meson", "amlogic", "s5p", "exynos", "omap",
        "atmel", "talitos", "hisi", "ccree", "stm32", "chcr", "nitrox", "nx-", "artpec", "ixp4xx", "mtk",
        "keembay", "aspeed", "zynqmp", "img-",
    ]

    /// Driver-name parts that mean "code on the CPU": generic C, the x86 SIMD and AES-NI/SHA-NI drivers,
    /// ARM's NEON and Crypto Extensions, the kernel's library implementations.
    static let cpuDriverMarkers = [
        "generic", "aesni", "-ni", "avx", "ssse3", "sse2", "sse4", "shani", "lib", "x86", "asm", "neon", "-ce",
        "arm64", "arm", "riscv", "zvk", "ppc", "vmx", "s390", "cpacf", "vsx", "octeon", "mips",
    ]

    /// Whether `kernelName` is served by CPU code (so the kernel cannot beat in-process software), `nil` when
    /// the kernel does not list it. A known engine family is not CPU code; otherwise a CPU marker is; a
    /// driver matching neither is taken for an engine (calibration then measures whether it wins).
    public func isServedByCPU(_ kernelName: String) -> Bool? {
        guard let driver = driver(for: kernelName)?.lowercased() else { return nil }
        if Self.engineDriverMarkers.contains(where: { driver.contains($0) }) { return false }
        return Self.cpuDriverMarkers.contains { driver.contains($0) }
    }
}
