import ArgumentParser
import HardwareKeys

struct ListSmartcards: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list-smartcards", abstract: "Display the tokens that can hold keys.",
        discussion: """
            One token ID per line, as create-keypair --token and kSecAttrTokenID take it: com.apple.setoken when \
            the TPM answers (/dev/tpmrm0, or the TPM $SECURITYSERVICES_TPM_TCTI names); a PKCS#11 URI for each \
            token in the PKCS#11 modules p11-kit registers (or the module $SECURITYSERVICES_PKCS11_MODULE names). \
            Nothing when there is none.
            """)

    func run() throws {
        if (try? TrustedPlatformModule.shared.open()) != nil { print(TPMKey.tokenID) }
        for token in (try? PKCS11Modules.shared().tokens()) ?? [] { print(token.tokenID) }
    }
}
