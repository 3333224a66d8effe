/// A backend the dispatcher may send work to instead of the software backend: the kernel crypto API, or any
/// other accelerator a program plugs in (see docs/dispatcher.md, "Adding a backend").
///
/// Besides the ``CryptoBackend`` calls it says, per operation, where the work would run. The dispatcher uses
/// that to choose its defaults: an operation served by CPU code never leaves software (it cannot win), one
/// served by an engine gets the engine defaults until a calibration measures the real crossover.
public protocol OffloadBackend: CryptoBackend {
    /// Why the backend can serve nothing on this machine, `nil` when it can serve something.
    var unavailableReason: String? { get }

    /// Where `operation` would run here.
    func placement(of operation: CryptoOperation) -> OffloadPlacement
}

/// Where an offload backend would run an operation: nowhere, on the CPU (the same instructions in-process
/// software uses, plus the cost of getting there), or on an engine off the CPU.
public struct OffloadPlacement: Sendable, Hashable, CustomStringConvertible {
    private enum Kind: Hashable { case absent, cpu, engine }

    private let kind: Kind
    /// The driver that would serve the operation, or why nothing would.
    public let detail: String

    private init(_ kind: Kind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }

    /// The backend cannot serve the operation here; `reason` says why.
    public static func absent(_ reason: String) -> OffloadPlacement { OffloadPlacement(.absent, reason) }
    /// Served by CPU code (`driver` names it): it cannot beat in-process software.
    public static func cpu(_ driver: String) -> OffloadPlacement { OffloadPlacement(.cpu, driver) }
    /// Served by an engine off the CPU (`driver` names it): it may win above some size.
    public static func engine(_ driver: String) -> OffloadPlacement { OffloadPlacement(.engine, driver) }

    public var isAvailable: Bool { kind != .absent }
    public var isEngine: Bool { kind == .engine }

    public var description: String {
        switch kind {
        case .absent: "absent (\(detail))"
        case .cpu: "CPU code (\(detail))"
        case .engine: "engine (\(detail))"
        }
    }
}

/// The time one call costs on a backend: a fixed part per call plus a part per byte, fitted to measurements.
/// Calibration writes one per backend and route; the dispatcher compares them where several offload backends
/// could serve a call.
public struct CallCost: Codable, Sendable, Hashable, CustomStringConvertible {
    public var fixedNanoseconds: Double
    public var nanosecondsPerByte: Double

    public init(fixedNanoseconds: Double, nanosecondsPerByte: Double) {
        self.fixedNanoseconds = fixedNanoseconds
        self.nanosecondsPerByte = nanosecondsPerByte
    }

    /// The predicted time of one call of `size` bytes.
    @inline(__always)
    public func nanoseconds(size: Int) -> Double { fixedNanoseconds + nanosecondsPerByte * Double(size) }

    /// The least-squares line through `points` (size, nanoseconds), each weighted by its relative error so
    /// that a 1 MiB point does not drown the 16-byte ones; both parts clamped at zero. `nil` with fewer than
    /// two distinct sizes.
    public static func fit(_ points: [(size: Int, nanoseconds: Double)]) -> CallCost? {
        let usable = points.filter { $0.nanoseconds.isFinite && $0.nanoseconds > 0 }
        guard Set(usable.map(\.size)).count >= 2 else { return nil }
        var (sw, sx, sy, sxx, sxy) = (0.0, 0.0, 0.0, 0.0, 0.0)
        for point in usable {
            let weight = 1 / (point.nanoseconds * point.nanoseconds)
            let x = Double(point.size)
            sw += weight
            sx += weight * x
            sy += weight * point.nanoseconds
            sxx += weight * x * x
            sxy += weight * x * point.nanoseconds
        }
        let determinant = sw * sxx - sx * sx
        guard determinant > 0 else { return nil }
        var perByte = (sw * sxy - sx * sy) / determinant
        var fixed = (sy - perByte * sx) / sw
        if perByte < 0 {
            perByte = 0
            fixed = sy / sw
        } else if fixed < 0 {
            fixed = 0
            perByte = sxy / sxx
        }
        return CallCost(fixedNanoseconds: fixed, nanosecondsPerByte: perByte)
    }

    public var description: String {
        let fixed = fixedNanoseconds >= 1000 ? "\((fixedNanoseconds / 100).rounded() / 10) µs" : "\(Int(fixedNanoseconds.rounded())) ns"
        return "\(fixed) + \((nanosecondsPerByte * 1000).rounded() / 1000) ns/B"
    }
}
