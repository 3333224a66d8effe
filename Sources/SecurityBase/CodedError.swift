/// The skeleton the project's error types share: a code from a closed set, a reason written for people (never a
/// secret), where it was made, equality and hashing by code alone (so `#expect(throws: KeychainError(.itemNotFound,
/// ""))` and `catch let error where error == …` compare what a caller branches on), a description
/// `TypeName.code: reason` unless the type says more, and a debug description that adds the source location.
public protocol CodedError: Error, Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    associatedtype Code: Hashable, Sendable, CustomStringConvertible
    var code: Code { get }
    var reason: String { get }
    /// Where the error was made: for a developer reading a log, not for branching on.
    var location: ErrorLocation { get }
}

extension CodedError {
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public var description: String { "\(Self.self).\(code): \(reason)" }
    public var debugDescription: String { "\(description) [\(location)]" }
}

/// A place in the package's source: the `#fileID` and `#line` an error was made at.
public struct ErrorLocation: Hashable, Sendable, CustomStringConvertible {
    public let fileID: String
    public let line: Int

    public init(fileID: StaticString = #fileID, line: UInt = #line) {
        self.fileID = "\(fileID)"
        self.line = Int(line)
    }

    public var description: String { "\(fileID):\(line)" }
}

/// A code of the error type `Domain`: a name from the closed set its extension declares
/// (`extension ErrorCode where Domain == KeychainError { public static let itemNotFound = … }`), printed as that
/// name. Only the package declares codes.
public struct ErrorCode<Domain>: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    package init(name: String) { self.name = name }
    public var description: String { name }
}
