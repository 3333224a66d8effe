public import CryptoContract
public import Foundation

/// How the dispatcher chooses: `auto` (by measured or default thresholds), `software` (always), or the name
/// of an offload backend (wherever that backend can serve the call, software elsewhere).
public struct DispatchPolicy: Hashable, Sendable, CustomStringConvertible {
    /// `auto`, `software`, or an offload backend's ``BackendKind/name``.
    public let name: String

    private init(uncheckedName name: String) { self.name = name }

    /// A policy by name (case-insensitive), `nil` when the name is empty or has characters other than letters,
    /// digits, `-` and `_`.
    public init?(name: String) {
        let lowered = name.lowercased()
        guard !lowered.isEmpty, lowered.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        else { return nil }
        self.name = lowered
    }

    /// Offload backends for enabled routes at or above their threshold, software otherwise.
    public static let auto = DispatchPolicy(uncheckedName: "auto")
    /// Always software.
    public static let software = DispatchPolicy(uncheckedName: "software")
    /// The kernel wherever it can serve the call (software only where it cannot).
    public static let kernel = backend(.kernel)

    /// `backend` wherever it can serve the call; software where it cannot, or where no such backend is plugged in.
    public static func backend(_ backend: BackendKind) -> DispatchPolicy { DispatchPolicy(uncheckedName: backend.name) }

    public var description: String { name }
}

/// What configures a dispatcher: a policy and explicit per-route thresholds, over a calibrated profile,
/// over documented defaults.
public struct DispatchConfiguration: Sendable {
    public var policy: DispatchPolicy
    /// Explicit thresholds in bytes for every offload backend; `nil` keeps a route away from them. They beat
    /// the profile and the defaults.
    public var thresholds: [Route: Int?]
    /// Explicit thresholds per offload backend name; they beat ``thresholds``.
    public var backendThresholds: [String: [Route: Int?]]
    /// A calibrated profile, used where no explicit threshold is given.
    public var profile: DispatchProfile?
    /// Whether auto mode learns each backend's cost from the calls it serves and follows it (see ``Dispatcher``), or
    /// keeps to the thresholds. Explicit thresholds are kept to either way.
    public var adaptive: Bool
    /// What the learned costs are compared for.
    public var goal: DispatchGoal

    public init(
        policy: DispatchPolicy = .auto, thresholds: [Route: Int?] = [:], backendThresholds: [String: [Route: Int?]] = [:],
        profile: DispatchProfile? = nil, adaptive: Bool = true, goal: DispatchGoal = .throughput
    ) {
        self.policy = policy
        self.thresholds = thresholds
        self.backendThresholds = backendThresholds
        self.profile = profile
        self.adaptive = adaptive
        self.goal = goal
    }

    /// The phone's engine thresholds, used for a backend whose placement of the route is an engine when nothing
    /// was calibrated: CommonCrypto sent AES to hardware above 1 KiB and SHA-1 above 4 KiB.
    public static let engineDefaults: [String: Int] = Dictionary(
        uniqueKeysWithValues: Route.phoneEngine.map { ($0.name, $0.direction == nil ? 4096 : 1024) })

    /// Reads `SECURITYSERVICES_DISPATCH` (`auto`, `software`, or a backend name such as `kernel`),
    /// `SECURITYSERVICES_DISPATCH_GOAL` (`throughput`, `free-cpu`, `free-cpu:<percent>`),
    /// `SECURITYSERVICES_DISPATCH_ADAPTIVE` (`no` keeps auto mode to its thresholds),
    /// `SECURITYSERVICES_THRESHOLD_<ROUTE>` (every offload backend) and `SECURITYSERVICES_THRESHOLD_<BACKEND>_<ROUTE>`
    /// (one backend): names upper-cased, `-` as `_`, e.g. `SECURITYSERVICES_THRESHOLD_AES_CBC_ENCRYPT=1024` or
    /// `SECURITYSERVICES_THRESHOLD_KERNEL_SHA1=never` (`never`, `off` or `none` disable the route). Unusable values
    /// are reported in `warnings` and ignored.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> (configuration: DispatchConfiguration, warnings: [String]) {
        var configuration = DispatchConfiguration()
        var warnings: [String] = []
        if let value = environment["SECURITYSERVICES_DISPATCH"], !value.isEmpty {
            if let policy = DispatchPolicy(name: value) {
                configuration.policy = policy
            } else {
                warnings.append("SECURITYSERVICES_DISPATCH=\(value) is not auto, software or a backend name; using auto")
            }
        }
        if let value = environment["SECURITYSERVICES_DISPATCH_GOAL"], !value.isEmpty {
            if let goal = DispatchGoal(name: value) {
                configuration.goal = goal
            } else {
                warnings.append("SECURITYSERVICES_DISPATCH_GOAL=\(value) is not throughput or free-cpu[:percent]; using throughput")
            }
        }
        if let value = environment["SECURITYSERVICES_DISPATCH_ADAPTIVE"], !value.isEmpty {
            switch value.lowercased() {
            case "yes", "1", "on", "true": configuration.adaptive = true
            case "no", "0", "off", "false": configuration.adaptive = false
            default: warnings.append("SECURITYSERVICES_DISPATCH_ADAPTIVE=\(value) is not yes or no; adapting")
            }
        }
        let prefix = "SECURITYSERVICES_THRESHOLD_"
        for (key, value) in environment.sorted(by: { $0.key < $1.key }) where key.hasPrefix(prefix) {
            let name = key.dropFirst(prefix.count).lowercased().replacingOccurrences(of: "_", with: "-")
            // The route alone, else a backend name (which may contain `-` itself) and then a route; `aes-…` stands
            // for the three AES key sizes.
            let splits = [(nil, name)] + name.indices.filter { name[$0] == "-" }.map { (String(name[..<$0]), String(name[name.index(after: $0)...])) }
            guard let target = splits.lazy.map({ (backend: $0.0, routes: Route.routes(named: $0.1)) }).first(where: { !$0.routes.isEmpty })
            else {
                warnings.append("\(key) names no route")
                continue
            }
            let threshold: Int?
            switch value.lowercased() {
            case "never", "off", "none": threshold = nil
            default:
                guard let bytes = Int(value), bytes >= 0 else {
                    warnings.append("\(key)=\(value) is not a byte count or never")
                    continue
                }
                threshold = bytes
            }
            for route in target.routes {
                if let backend = target.backend {
                    configuration.backendThresholds[backend, default: [:]][route] = .some(threshold)
                } else {
                    configuration.thresholds[route] = .some(threshold)
                }
            }
        }
        return (configuration, warnings)
    }
}
