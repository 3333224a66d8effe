import ArgumentParser
import HardwareKeys

struct ListSmartcards: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list-smartcards", abstract: "Display the tokens that can hold keys.",
        discussion: """
            One token ID per line, as create-keypair --token takes it: com.apple.setoken when the TPM answers \
            (/dev/tpmrm0, or the TPM $SECURITYSERVICES_TPM_TCTI names). Nothing when there is none.
            """)

    func run() throws {
        if (try? TrustedPlatformModule.shared.open()) != nil { print(TPMKey.tokenID) }
    }
}
