import SecurityBase
import CryptoContract
import Foundation
import Testing

@Suite("SecretBytes: copy-on-write secret storage, never printed")
struct SecretBytesTests {
    @Test("copies share storage until one changes; the change stays in its copy")
    func copyOnWrite() {
        let original = SecretBytes([1, 2, 3, 4])
        var copy = original
        copy[0] = 9
        copy.append(5)
        #expect(original.withUnsafeBytes { Array($0) } == [1, 2, 3, 4])
        #expect(copy.withUnsafeBytes { Array($0) } == [9, 2, 3, 4, 5])
        var grown = SecretBytes(zeroed: 0)
        for byte in UInt8(0)..<100 { grown.append(byte) }
        [UInt8](repeating: 7, count: 3).withUnsafeBytes { grown.append(contentsOf: $0) }
        #expect(grown.count == 103 && grown[99] == 99 && grown[102] == 7)
        #expect(SecretBytes(Data([5, 6])).withUnsafeBytes { Array($0) } == [5, 6])
        #expect(SecretBytes((0..<3).lazy.map { UInt8($0) }).withUnsafeBytes { Array($0) } == [0, 1, 2])
    }

    @Test("description, debugDescription, interpolation and dump show the length only")
    func neverPrinted() {
        let secret = SecretBytes(Array("hunter2-PASSWORD".utf8))
        var dumped = ""
        dump(secret, to: &dumped)
        for text in [secret.description, secret.debugDescription, "\(secret)", String(reflecting: secret), dumped] {
            #expect(!text.contains("hunter2") && !text.contains("104"), "\(text)")
            #expect(text.contains("16"), "\(text)")
        }
    }

    @Test("one constant-time comparison: equal, unequal at any position, unequal lengths")
    func comparison() {
        let secret = SecretBytes([1, 2, 3])
        #expect([UInt8]([1, 2, 3]).withUnsafeBytes { secret.constantTimeEquals($0) })
        #expect(![UInt8]([1, 2, 4]).withUnsafeBytes { secret.constantTimeEquals($0) })
        #expect(![UInt8]([0, 2, 3]).withUnsafeBytes { secret.constantTimeEquals($0) })
        #expect(![UInt8]([1, 2]).withUnsafeBytes { secret.constantTimeEquals($0) })
        #expect(constantTimeEquals([], []))
    }
}
