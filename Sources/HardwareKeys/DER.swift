/// The little DER the hardware's public keys need (a token's attributes, a TPM's public area).
enum DER {
    /// CKA_EC_POINT is a DER OCTET STRING around the point in PKCS#11 2.20+, the bare point in some older tokens.
    static func unwrappedPoint(_ value: [UInt8]) -> [UInt8] {
        guard value.count > 2, value[0] == 0x04 else { return value }
        var offset = 2
        var length = Int(value[1])
        if value[1] == 0x81, value.count > 3 {
            length = Int(value[2])
            offset = 3
        }
        let inner = value.count - offset
        guard length == inner, [65, 97, 133].contains(inner), value[offset] == 0x04 else { return value }
        return Array(value[offset...])
    }

    /// PKCS#1 RSAPublicKey: SEQUENCE { INTEGER modulus, INTEGER exponent }.
    static func rsaPublicKey(modulus: [UInt8], exponent: [UInt8]) -> [UInt8] {
        func integer(_ bytes: [UInt8]) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02] + length(value.count) + value
        }
        let body = integer(modulus) + integer(exponent)
        return [0x30] + length(body.count) + body
    }

    static func length(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var rest = count
        while rest > 0 {
            bytes.insert(UInt8(rest & 0xff), at: 0)
            rest >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }
}
