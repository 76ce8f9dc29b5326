"""ROCm code objects (HSACO) without a ROCm runtime: pull them out of a compiled module, read
their ELF header and kernel symbols, disassemble them with llvm-objdump.

TVM 0.27 without its ROCm runtime keeps the code object in a device module of kind "hip" that
neither writes itself to a file nor shows its bytes (`inspect_source("hsaco")` fails to decode
them), but `export_library` embeds the bytes verbatim in the host library; `code_objects`
finds them there. Loading such a library needs TVM's ROCm runtime (`ffi.Module.load_from_bytes.hip`).
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Optional

EM_AMDGPU = 224
ELFOSABI_AMDGPU_HSA = 64
# EF_AMDGPU_MACH (e_flags & 0xff) of the archs tefuse names (LLVM's llvm/BinaryFormat/ELF.h)
MACH = {0x2c: "gfx900", 0x2f: "gfx906", 0x30: "gfx908", 0x3f: "gfx90a", 0x40: "gfx940", 0x4b: "gfx941",
        0x4c: "gfx942", 0x4f: "gfx950", 0x36: "gfx1030", 0x41: "gfx1100", 0x48: "gfx1200"}
# EI_ABIVERSION -> code object version
CODE_OBJECT_VERSION = {1: 3, 2: 4, 3: 5, 4: 6}


@dataclass(frozen=True)
class CodeObject:
    """One AMDGPU code object: its bytes and what its ELF header and symbol table say."""

    data: bytes
    machine: int  # e_machine: EM_AMDGPU
    os_abi: int  # ELFOSABI_AMDGPU_HSA
    code_object_version: Optional[int]
    flags: int  # e_flags
    kernels: tuple[str, ...]  # from the kernel descriptors' symbols (NAME.kd)

    @property
    def arch(self) -> Optional[str]:
        return MACH.get(self.flags & 0xff)


def _elf_size(data: bytes, at: int) -> int:
    """Bytes of the ELF64 image starting at `at` (its section headers come last)."""
    shoff, = struct.unpack_from("<Q", data, at + 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, at + 0x3a)
    phoff, = struct.unpack_from("<Q", data, at + 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, at + 0x36)
    return max(shoff + shentsize * shnum, phoff + phentsize * phnum)


def find_code_objects(blob: bytes) -> list[bytes]:
    """Every AMDGPU ELF image embedded in `blob` (a host library that carries device code)."""
    out, at = [], blob.find(b"\x7fELF", 1)
    while at >= 0:
        if (len(blob) >= at + 64 and blob[at + 4] == 2 and blob[at + 5] == 1
                and struct.unpack_from("<H", blob, at + 18)[0] == EM_AMDGPU):
            size = _elf_size(blob, at)
            if at + size <= len(blob):
                out.append(bytes(blob[at:at + size]))
                at = blob.find(b"\x7fELF", at + size)
                continue
        at = blob.find(b"\x7fELF", at + 1)
    return out


def code_objects(module) -> list[bytes]:
    """The code objects of a compiled ROCm module (exported to a temporary library and read back)."""
    with tempfile.TemporaryDirectory(prefix="tefuse-hsaco-") as tmp:
        path = os.path.join(tmp, "kernel.so")
        module.export_library(path)
        with open(path, "rb") as f:
            return find_code_objects(f.read())


def read_code_object(data: bytes) -> CodeObject:
    """Parse an AMDGPU ELF64 code object's header and its kernel descriptor symbols."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not an ELF64 image")
    machine, = struct.unpack_from("<H", data, 18)
    flags, = struct.unpack_from("<I", data, 48)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize) for k in range(shnum)]
    kernels = []
    for sec in sections:
        if sec[1] not in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            continue
        _, _, _, _, off, size, link, _, _, entsize = sec
        stroff = sections[link][4]
        for k in range(size // (entsize or 24)):
            st_name, st_info = struct.unpack_from("<IB", data, off + k * (entsize or 24))
            end = data.index(b"\0", stroff + st_name)
            name = data[stroff + st_name:end].decode("utf-8", "replace")
            if name.endswith(".kd") and (st_info & 0xf) == 1:  # STT_OBJECT: a kernel descriptor
                kernels.append(name[:-3])
    return CodeObject(data, machine, data[7], CODE_OBJECT_VERSION.get(data[8]), flags,
                      tuple(dict.fromkeys(kernels)))


def find_objdump() -> Optional[str]:
    """llvm-objdump, the newest versioned one first (AMDGPU archs are added release by release:
    LLVM 14's knows no gfx942 and no code object v6)."""
    def version(p: str) -> int:
        m = re.search(r"-(\d+)$", p)
        return int(m.group(1)) if m else 0

    found = {os.path.realpath(p): p for d in os.get_exec_path()
             for p in glob.glob(os.path.join(d, "llvm-objdump-[0-9]*"))}
    cands = sorted(found.values(), key=version, reverse=True)
    plain = shutil.which("llvm-objdump")
    return (cands or [plain])[0] if (cands or plain) else None


def disassemble(data: bytes, mcpu: str, objdump: Optional[str] = None) -> str:
    """llvm-objdump's disassembly of a code object for `mcpu` (e.g. gfx942)."""
    tool = objdump or find_objdump()
    if tool is None:
        raise RuntimeError("no llvm-objdump on PATH (Debian: llvm-22)")
    with tempfile.TemporaryDirectory(prefix="tefuse-hsaco-") as tmp:
        path = os.path.join(tmp, "kernel.hsaco")
        with open(path, "wb") as f:
            f.write(data)
        proc = subprocess.run([tool, "-d", f"--mcpu={mcpu}", path], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 or "not a recognized processor" in proc.stderr:
        raise RuntimeError(f"{os.path.basename(tool)} --mcpu={mcpu} failed: "
                           f"{(proc.stderr.strip().splitlines() or ['exit %d' % proc.returncode])[-1]}")
    return proc.stdout


def instructions(disasm: str) -> list[str]:
    """The mnemonics of llvm-objdump's disassembly, in order."""
    return [m.group(1) for m in re.finditer(r"^\s+([a-z][a-z0-9_]*)\b[^\n]*//\s*[0-9A-Fa-f]+:", disasm, re.M)]
