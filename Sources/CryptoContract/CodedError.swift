/// The skeleton the project's error types share: a code from a closed set, a reason written for people (never a
/// secret), equality and hashing by code alone (so `#expect(throws: KeychainError(.itemNotFound, ""))` and
/// `catch let error where error == …` compare what a caller branches on), and a description
/// `TypeName.code: reason` unless the type says more.
public protocol CodedError: Error, Hashable, Sendable, CustomStringConvertible {
    associatedtype Code: Hashable, Sendable, CustomStringConvertible
    var code: Code { get }
    var reason: String { get }
}

extension CodedError {
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public var description: String { "\(Self.self).\(code): \(reason)" }
}

/// A code of the error type `Domain`: a name from the closed set its extension declares
/// (`extension ErrorCode where Domain == KeychainError { public static let itemNotFound = … }`), printed as that
/// name. Only the package declares codes.
public struct ErrorCode<Domain>: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    package init(name: String) { self.name = name }
    public var description: String { name }
}
