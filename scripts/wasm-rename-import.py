#!/usr/bin/env python3
"""Renames one function import of a wasm module: `wasm-rename-import.py MODULE OLD NEW`.

scripts/build-editor.sh needs it because wasm_split_cli 0.2.2 keeps in the main module
the functions that call wasm-bindgen's describe marker under the marker's old name,
`__wbindgen_describe_cast`, which wasm-bindgen 0.2.128 renamed
`__wbindgen_describe_generic_import`: the marker is given its old name for the split
and its own back before wasm-bindgen reads the module. Only the import section's
names change; everything else refers to imports by index. Fails, saying why, when
the module has no such import."""

import sys


def leb(data, at):
    """The unsigned LEB128 number at `at`, and where it ends."""
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def to_leb(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def limits_end(data, at):
    flags = data[at]
    _, at = leb(data, at + 1)
    return leb(data, at)[1] if flags & 1 else at


def renamed_imports(body, old, new):
    """The import section's body with function import `old` named `new`, and how many
    imports were renamed."""
    count, at = leb(body, 0)
    out, renamed = bytearray(body[:at]), 0
    for _ in range(count):
        start = at
        length, at = leb(body, at)
        field_at = at + length
        length, name_at = leb(body, field_at)
        name = body[name_at : name_at + length]
        desc_at = name_at + length
        kind = body[desc_at]
        at = desc_at + 1
        if kind == 0x00:  # a function: its type index
            _, at = leb(body, at)
        elif kind == 0x01:  # a table: its element type and limits
            at = limits_end(body, at + 1)
        elif kind == 0x02:  # a memory: its limits
            at = limits_end(body, at)
        elif kind == 0x03:  # a global: its value type and mutability
            at += 2
        elif kind == 0x04:  # a tag: its attribute and type index
            _, at = leb(body, at + 1)
        else:
            raise ValueError(f"an import of unknown kind {kind:#x}")
        if kind == 0x00 and name == old:
            out += body[start:field_at] + to_leb(len(new)) + new + body[desc_at:at]
            renamed += 1
        else:
            out += body[start:at]
    return bytes(out), renamed


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: wasm-rename-import.py MODULE OLD NEW")
    path, old, new = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
    data = open(path, "rb").read()
    if data[:4] != b"\0asm":
        sys.exit(f"{path} is not a wasm module")
    out, at, renamed = bytearray(data[:8]), 8, 0
    while at < len(data):
        section = data[at]
        size, body_at = leb(data, at + 1)
        body = data[body_at : body_at + size]
        if section == 2:
            body, renamed = renamed_imports(body, old, new)
        out += bytes([section]) + to_leb(len(body)) + body
        at = body_at + size
    if renamed != 1:
        sys.exit(f"{path} imports {renamed} functions named {old.decode()}, not one: has wasm-bindgen changed its marker?")
    open(path, "wb").write(out)


if __name__ == "__main__":
    main()
