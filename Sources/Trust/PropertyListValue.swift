package import Foundation

/// A property list read with Foundation's Codable decoder, as Foundation's untyped objects (`String`, `NSNumber`,
/// `Data`, `Date`, arrays, dictionaries). Used instead of `PropertyListSerialization.propertyList(from:)`, which on
/// Linux leaks the CFError it makes for every malformed input (a fuzz run of the trust-settings reader found it under
/// LeakSanitizer); trust settings and exceptions are read from files and callers.
package enum PropertyListValue: Decodable {
    case string(String)
    case integer(Int64)
    case real(Double)
    case boolean(Bool)
    case date(Date)
    case data(Data)
    case array([PropertyListValue])
    case dictionary([String: PropertyListValue])

    package init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var values: [PropertyListValue] = []
            while !array.isAtEnd { values.append(try array.decode(PropertyListValue.self)) }
            self = .array(values)
            return
        }
        if let dictionary = try? decoder.container(keyedBy: AnyKey.self) {
            var values: [String: PropertyListValue] = [:]
            for key in dictionary.allKeys { values[key.stringValue] = try dictionary.decode(PropertyListValue.self, forKey: key) }
            self = .dictionary(values)
            return
        }
        let value = try decoder.singleValueContainer()
        if let bool = try? value.decode(Bool.self) {
            self = .boolean(bool)
        } else if let integer = try? value.decode(Int64.self) {
            self = .integer(integer)
        } else if let real = try? value.decode(Double.self) {
            self = .real(real)
        } else if let date = try? value.decode(Date.self) {
            self = .date(date)
        } else if let data = try? value.decode(Data.self) {
            self = .data(data)
        } else {
            self = .string(try value.decode(String.self))
        }
    }

    /// The bytes as a property list (XML or binary), as Foundation's objects; nil when they are not one.
    package static func object(from data: Data) -> Any? {
        (try? PropertyListDecoder().decode(PropertyListValue.self, from: data))?.object
    }

    /// The value as Foundation's untyped object.
    package var object: Any {
        switch self {
        case .string(let value): value
        case .integer(let value): NSNumber(value: value)
        case .real(let value): NSNumber(value: value)
        case .boolean(let value): NSNumber(value: value)
        case .date(let value): value
        case .data(let value): value
        case .array(let values): values.map(\.object)
        case .dictionary(let values): values.mapValues(\.object)
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
