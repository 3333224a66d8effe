#!/usr/bin/env python3
"""Summarise an AF_ALG VM run (see run-vm.sh). Standard library only.

Reads the VM console log, finds the result markers the guest's /init printed
(AFALG-<nonce>-...), decodes the Swift Testing xUnit XML, and prints:

    afalg: <info lines...>
    afalg: <reason>                     (only when the run failed)
    afalg: N passed, M failed[, K skipped]

The last line is always the summary over the Swift Testing cases. Exit status
is 0 only if the VM booted and finished, no test case failed, both test runs
exited 0 (the XCTest run may be skipped: XCTEST-SKIPPED, when a filter selects
Swift Testing cases) and at least one kernel test ran; in the engine lanes also
only if cbc(aes) was served by virtio_crypto before and after the run
(ENGINE-MISSING markers). A kernel test is a test case whose
class name or name contains "Kernel" or "AFALG" (any case) and which was not
skipped; Swift Testing cases come from the XML, XCTest cases from the
"Test Case '...' passed|failed" console lines.
"""

import argparse
import base64
import binascii
import re
import sys
import xml.etree.ElementTree as ET

KERNEL_RE = re.compile(r"kernel|afalg", re.IGNORECASE)
BASE64_LINE_RE = re.compile(r"^[A-Za-z0-9+/=]+$")
XCTEST_CASE_RE = re.compile(r"Test Case '([^']+)' (passed|failed|skipped)")
XCTEST_SUMMARY_RE = re.compile(r"Executed (\d+) tests?, with (\d+) failures?")
# Terminal control sequences (SeaBIOS clears the screen right before the kernel starts).
ESCAPE_RE = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|[@-Z\\-_]|c)")


LABEL = "afalg"


def info(text):
    print(f"{LABEL}: {text}")


def section(lines, begin, end_prefix):
    """Lines after the line equal to `begin` up to the first line starting with end_prefix."""
    try:
        start = lines.index(begin) + 1
    except ValueError:
        return None
    out = []
    for line in lines[start:]:
        if line.startswith(end_prefix):
            break
        out.append(line)
    return out


def marker_value(lines, prefix):
    for line in lines:
        if line.startswith(prefix):
            value = line[len(prefix):].strip()
            try:
                return int(value)
            except ValueError:
                return None
    return None


def count_xunit(xml_bytes):
    root = ET.fromstring(xml_bytes)
    passed, failed, skipped, kernel = 0, 0, 0, 0
    failed_names = []
    for case in root.iter("testcase"):
        classname = case.get("classname", "")
        name = case.get("name", "")
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            failed_names.append(f"{classname}.{name}" if classname else name)
            is_run = True
        elif case.find("skipped") is not None:
            skipped += 1
            is_run = False
        else:
            passed += 1
            is_run = True
        if is_run and (KERNEL_RE.search(classname) or KERNEL_RE.search(name)):
            kernel += 1
    return passed, failed, skipped, kernel, failed_names


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", required=True, help="console log of the VM")
    parser.add_argument("--nonce", required=True, help="marker nonce baked into /init")
    parser.add_argument("--xml-out", help="write the decoded xUnit XML here")
    parser.add_argument("--qemu-rc", type=int, default=0, help="exit status of qemu/timeout")
    parser.add_argument("--label", default="afalg", help="the lane: prefix of every printed line")
    args = parser.parse_args()
    global LABEL
    LABEL = args.label

    with open(args.log, "rb") as handle:
        text = handle.read().decode("utf-8", errors="replace")
    marker = f"AFALG-{args.nonce}-"
    lines = []
    for line in text.split("\n"):
        line = ESCAPE_RE.sub("", line).replace("\r", "").rstrip()
        # A marker glued to earlier output on the same line still starts its own line.
        at = line.find(marker)
        if at > 0:
            lines.append(line[:at])
            line = line[at:]
        lines.append(line)

    reasons = []
    passed = failed = skipped = kernel_st = 0
    failed_names = []

    booted = any(line.startswith(marker + "BOOTED") for line in lines)
    done = any(line.startswith(marker + "DONE") for line in lines)
    if not booted:
        why = "timed out" if args.qemu_rc == 124 else f"qemu exit status {args.qemu_rc}"
        info(f"the VM did not boot or printed no result markers ({why})")
        info("0 passed, 0 failed")
        return 1
    if not done:
        why = "timed out" if args.qemu_rc == 124 else f"qemu exit status {args.qemu_rc}"
        reasons.append(f"the VM booted but did not finish the run ({why})")

    for line in lines:
        if line.startswith(marker + "MODPROBE-FAILED"):
            reasons.append(f"modprobe failed: {line[len(marker + 'MODPROBE-FAILED'):].strip()}")
        if line.startswith(marker + "ENGINE-MISSING"):
            reasons.append(f"no engine: {line[len(marker + 'ENGINE-MISSING'):].strip()}")

    # XCTest half.
    xctest_rc = marker_value(lines, marker + "XCTEST-RC=")
    xctest_lines = section(lines, marker + "XCTEST-BEGIN", marker) or []
    summaries = [XCTEST_SUMMARY_RE.search(line) for line in xctest_lines]
    summaries = [m for m in summaries if m]
    kernel_xc = 0
    xc_failed_names = []
    for line in xctest_lines:
        m = XCTEST_CASE_RE.search(line)
        if not m:
            continue
        name, status = m.group(1), m.group(2)
        if status != "skipped" and KERNEL_RE.search(name):
            kernel_xc += 1
        if status == "failed":
            xc_failed_names.append(name)
    xctest_skipped = next((line[len(marker + "XCTEST-SKIPPED"):].strip() for line in lines
                           if line.startswith(marker + "XCTEST-SKIPPED")), None)
    if xctest_skipped is not None:
        info(f"XCTest: skipped ({xctest_skipped})")
    elif summaries:
        last = summaries[-1]
        info(f"XCTest: executed {last.group(1)} tests, with {last.group(2)} failures; exit {xctest_rc}")
    else:
        info(f"XCTest: no summary line (no XCTest cases?); exit {xctest_rc}")
    if xctest_skipped is not None:
        pass
    elif xctest_rc is None:
        reasons.append("no XCTest exit status marker")
    elif xctest_rc != 0:
        detail = f" ({', '.join(xc_failed_names[:5])})" if xc_failed_names else ""
        reasons.append(f"XCTest run exited {xctest_rc}{detail}")

    # Swift Testing half.
    st_rc = marker_value(lines, marker + "ST-RC=")
    if st_rc is None:
        reasons.append("no Swift Testing exit status marker")
    elif st_rc != 0:
        reasons.append(f"Swift Testing run exited {st_rc}")

    payload = section(lines, marker + "XUNIT-BEGIN", marker + "XUNIT-END")
    if payload is None:
        if (marker + "XUNIT-MISSING") in lines:
            reasons.append("the Swift Testing run wrote no xUnit file")
        else:
            reasons.append("no xUnit XML markers in the console log")
    else:
        # Keep only pure base64 lines: stray kernel messages must not corrupt the payload.
        data = "".join(line.strip() for line in payload if BASE64_LINE_RE.match(line.strip()))
        try:
            xml_bytes = base64.b64decode(data, validate=True)
            if args.xml_out:
                with open(args.xml_out, "wb") as handle:
                    handle.write(xml_bytes)
            passed, failed, skipped, kernel_st, failed_names = count_xunit(xml_bytes)
        except (binascii.Error, ValueError, ET.ParseError) as error:
            reasons.append(f"could not decode the xUnit XML: {error}")

    info(f"kernel tests executed: {kernel_st} Swift Testing + {kernel_xc} XCTest")
    if failed:
        shown = ", ".join(failed_names[:5]) + (", ..." if len(failed_names) > 5 else "")
        reasons.append(f"{failed} Swift Testing case(s) failed: {shown}")
    if kernel_st + kernel_xc == 0 and not reasons:
        reasons.append("zero kernel tests executed (no passed/failed case named *Kernel* or *AFALG*)")
    elif kernel_st + kernel_xc == 0:
        reasons.append("zero kernel tests executed")

    for reason in reasons:
        info(f"FAIL: {reason}")
    summary = f"{LABEL}: {passed} passed, {failed} failed"
    if skipped:
        summary += f", {skipped} skipped"
    print(summary)
    return 1 if reasons else 0


if __name__ == "__main__":
    sys.exit(main())
