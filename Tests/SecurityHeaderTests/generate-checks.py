#!/usr/bin/env python3
"""Writes SymbolChecks.swift from symbols.tsv: one statement a row that binds the name to a constant of the row's
type (the build fails when a name is missing or has another type) and records its value for the tests. A function
row binds the function to its Swift function type, so an Apple-platform call of it compiles here; rows of type
`excluded` (named in the README) are left out.

Usage: generate-checks.py symbols.tsv > SymbolChecks.swift
"""
import sys


def main():
    print("// Generated from symbols.tsv by generate-checks.py: do not edit (run the script again after changing the list).")
    print("// Each row of the list is one statement: a name Apple's headers declare, bound to a constant of the type Swift")
    print("// gives it on Apple platforms, so the test target does not build when one is missing or of another type.")
    print("import Dispatch")
    print("import Foundation")
    print("import Security")
    print("")
    print("/// The rows, reached through this protocol: `rows()` is deprecated because it binds Apple's deprecated names too")
    print("/// (on purpose: code using them must compile), and a deprecated declaration may use deprecated names without a")
    print("/// warning, which the build treats as an error.")
    print("protocol HeaderSymbolRows {")
    print("    static func rows() -> [HeaderSymbols.Row]")
    print("}")
    print("")
    print("enum HeaderSymbols: HeaderSymbolRows {")
    print("    struct Row: Sendable {")
    print("        let header: String")
    print("        let name: String")
    print("        /// The value as this package has it (its text; an OSStatus in decimal); nil where it is not text.")
    print("        let value: String?")
    print("        /// Apple's value, from Apple's sources; empty when not compared.")
    print("        let expected: String")
    print("    }")
    print("")
    print("    /// Every row, bound to its name (use ``all``).")
    print("    @available(*, deprecated, message: \"binds Apple's deprecated names on purpose; use HeaderSymbols.all\")")
    print("    static func rows() -> [Row] {")
    print("        var rows: [Row] = []")
    for line in open(sys.argv[1], encoding="utf-8"):
        if line.startswith("#") or not line.strip():
            continue
        header, name, swift_type, expected = (line.rstrip("\n").split("\t") + [""])[:4]
        if swift_type == "type":
            print(f'        do {{ let _: Any.Type = {name}.self; rows.append(Row(header: "{header}", name: "{name}", value: nil, expected: "")) }}')
            continue
        if swift_type == "excluded":
            continue
        if swift_type.startswith("= "):
            # A type alias: the alias must be that very type.
            print(f'        do {{ let _: {swift_type[2:]}.Type = {name}.self; rows.append(Row(header: "{header}", name: "{name}", value: nil, expected: "")) }}')
            continue
        if swift_type.startswith("("):
            print(f'        do {{ let _: {swift_type} = {name}; rows.append(Row(header: "{header}", name: "{name}", value: nil, expected: "")) }}')
            continue
        if "." in name and swift_type not in ("SecKeyAlgorithm", "SecKeyKeyExchangeParameter"):
            # An enumeration's case or an option: its raw value, compared with the header's.
            member = name.split(".", 1)[1]
            print(f'        do {{ let value: {swift_type} = .{member}; rows.append(Row(header: "{header}", name: "{name}", value: String(value.rawValue), expected: "{expected}")) }}')
            continue
        if swift_type == "CFString":
            text = "value as String"
        elif swift_type == "OSStatus":
            text = "String(value)"
        elif swift_type in ("SecKeyAlgorithm", "SecKeyKeyExchangeParameter"):
            text = "value.rawValue as String"
        else:
            print(f'        do {{ let _: {swift_type} = {name}; rows.append(Row(header: "{header}", name: "{name}", value: nil, expected: "{expected}")) }}')
            continue
        print(f'        do {{ let value: {swift_type} = {name}; rows.append(Row(header: "{header}", name: "{name}", value: {text}, expected: "{expected}")) }}')
    print("        return rows")
    print("    }")
    print("")
    print("    /// Every row.")
    print("    static var all: [Row] { (HeaderSymbols.self as any HeaderSymbolRows.Type).rows() }")
    print("}")


if __name__ == "__main__":
    main()
