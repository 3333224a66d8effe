#!/usr/bin/env python3
"""Writes symbols.tsv, the names Apple's public Security headers declare that this package must provide, with the
type Swift gives them on Apple platforms and, where Apple's sources define one, the value.

Usage: extract-symbols.py APPLE_SECURITY_CHECKOUT > symbols.tsv
  APPLE_SECURITY_CHECKOUT: a checkout of https://github.com/apple-oss-distributions/Security (the rows in the
  repository come from Security-61901.0.87.0.1).

Covered so far (issue 19): every `extern const` constant of the headers issue 19 names (CFString keys and values;
SecKeyAlgorithm and SecKeyKeyExchangeParameter constants, which Swift imports as static members) and every OSStatus
code of SecBase.h. Functions and enums are to come. Columns: header, Swift name, Swift type, value ("" when unknown).
"""
import os
import re
import subprocess
import sys

HEADERS = {
    "SecBase.h": "base/SecBase.h", "SecRandom.h": "base/SecRandom.h",
    "SecAccessControl.h": "keychain/headers/SecAccessControl.h", "SecIdentity.h": "keychain/headers/SecIdentity.h",
    "SecImportExport.h": "keychain/headers/SecImportExport.h", "SecItem.h": "keychain/headers/SecItem.h",
    "SecKey.h": "keychain/headers/SecKey.h", "SecSharedCredential.h": "keychain/headers/SecSharedCredential.h",
    "SecCertificate.h": "trust/headers/SecCertificate.h", "SecPolicy.h": "trust/headers/SecPolicy.h",
    "SecTrust.h": "trust/headers/SecTrust.h", "SecureTransport.h": "OSX/libsecurity_ssl/lib/SecureTransport.h",
}
# Constants whose type is a CF_STRING_ENUM: Swift imports them as static members, named without the prefix.
STATIC_MEMBERS = {"SecKeyAlgorithm": "kSecKeyAlgorithm", "SecKeyKeyExchangeParameter": "kSecKeyKeyExchangeParameter"}


def swift_member(rest):
    """Swift's lower-casing of a leading initialism: RSASignatureRaw -> rsaSignatureRaw, RequestedSize -> requestedSize."""
    run = re.match(r"[A-Z]+", rest).group(0)
    if len(run) == len(rest):
        return rest.lower()
    if rest[len(run)].islower() and len(run) > 1:
        return run[:-1].lower() + rest[len(run) - 1:]
    return run.lower() + rest[len(run):]


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))


def values(checkout):
    """CFString values of constants, as Apple's sources define them."""
    found = {}
    output = subprocess.run(
        ["git", "-C", checkout, "grep", "-h", "-E", r"(SEC_CONST_DECL *\(|CFStringRef[^=]*= *CFSTR|SecKey[A-Za-z]* k\w+ *= *CFSTR)", "HEAD", "--", "*.c", "*.m", "*.cpp"],
        capture_output=True, text=True).stdout
    for line in output.splitlines():
        match = re.search(r"SEC_CONST_DECL *\( *(k\w+) *, *\"([^\"]*)\"", line) or re.search(r"(k\w+) *= *CFSTR\(\"([^\"]*)\"\)", line)
        if match:
            found.setdefault(match.group(1), match.group(2))
    for line in subprocess.run(["git", "-C", checkout, "show", "HEAD:OSX/sec/Security/SecPolicy.list"], capture_output=True, text=True).stdout.splitlines():
        match = re.match(r"POLICYMACRO\((\w+),\s*(\d+)", line)
        if match:
            found.setdefault("kSecPolicyApple" + match.group(1), "1.2.840.113635.100.1." + match.group(2))
    return found


def main():
    checkout = sys.argv[1]
    known = values(checkout)
    rows = []
    for header, path in HEADERS.items():
        text = strip_comments(subprocess.run(["git", "-C", checkout, "show", "HEAD:" + path], capture_output=True, text=True).stdout)
        for match in re.finditer(r"extern\s+const\s+(\w+)\s+(?:_Nonnull\s+|__nonnull\s+|_Nullable\s+)?(k\w+)", text):
            ctype, name = match.groups()
            if ctype in STATIC_MEMBERS:
                rows.append((header, ctype + "." + swift_member(name[len(STATIC_MEMBERS[ctype]):]), ctype, known.get(name, "")))
            elif ctype == "CFStringRef":
                rows.append((header, name, "CFString", known.get(name, "")))
            elif ctype == "SecRandomRef":
                rows.append((header, name, "SecRandomRef?", ""))
        if header == "SecBase.h":
            for block in re.finditer(r"CF_ENUM\s*\(\s*OSStatus\s*\)\s*\{(.*?)\}", text, re.S):
                for member in re.finditer(r"^\s*(err\w+)\s*(?:API_\w+\((?:[^()]|\([^()]*\))*\)\s*)?=\s*(-?\d+)", block.group(1), re.M):
                    rows.append((header, member.group(1), "OSStatus", member.group(2)))
    seen = set()
    print("# header\tSwift name\tSwift type\tvalue (Apple's sources; empty: not checked)")
    for row in rows:
        if row[1] not in seen:
            seen.add(row[1])
            print("\t".join(row))


if __name__ == "__main__":
    main()
