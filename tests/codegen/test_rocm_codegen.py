"""ROCm without AMD hardware: TVM's AMDGPU build makes real code objects (HSACO) for gfx942 and
gfx90a from a fused conv chain; their ELF headers, kernel symbols and llvm-objdump's
disassembly are checked. Needs ROCm's device libraries and an ld.lld new enough for TVM's
LLVM (Debian: rocm-device-libs, lld-22; llvm-22 for llvm-objdump), which .ci/run installs: the
`toolchain` and `objdump` fixtures (tests/conftest.py) skip without them, or fail under
TEFUSE_REQUIRE_ROCM=1."""
from __future__ import annotations

import os
import re

import pytest

import tefuse
from tefuse.codegen.rocm import EM_AMDGPU, code_objects, disassemble, instructions, read_code_object
from tests.conftest import _llvm_has_amdgpu
from tests.codegen.test_cuda_codegen import conv_chain


@pytest.fixture(scope="module")
def built(toolchain):
    cache = {}

    def get(arch, **kw):
        key = (arch, tuple(sorted(kw.items())))
        if key not in cache:
            cache[key] = tefuse.build(conv_chain(**kw), f"rocm:{arch}")
        return cache[key]

    return get


@pytest.mark.parametrize("arch", ["gfx942", "gfx90a"])
def test_conv_bias_bn_relu_is_one_amdgpu_kernel_in_a_real_code_object(built, arch):
    cg = built(arch, kind="bn", c=16, k=16, hw=14)
    assert cg.num_kernels == 1
    (co,) = code_objects(cg.kernels[0].module)
    obj = read_code_object(co)
    assert obj.machine == EM_AMDGPU == 224 and obj.os_abi == 64  # ELFOSABI_AMDGPU_HSA
    assert obj.arch == arch, hex(obj.flags)
    assert obj.code_object_version in (5, 6)
    assert obj.kernels == ("main_kernel",)
    assert f"amdgcn-amd-amdhsa".encode() in co and arch.encode() in co  # the metadata note names the target


@pytest.mark.parametrize("arch", ["gfx942", "gfx90a"])
def test_the_code_object_disassembles_to_real_instructions(built, objdump, arch):
    cg = built(arch, kind="bn", c=16, k=16, hw=14)
    text = disassemble(code_objects(cg.kernels[0].module)[0], arch, objdump)
    assert re.search(r"^[0-9a-f]+ <main_kernel>:", text, re.M)
    ops = instructions(text)
    assert len(ops) > 100 and "s_endpgm" in ops, ops[-5:]
    assert any(o.startswith("v_fma") or o.startswith("v_mac") or o.startswith("v_mad") for o in ops)
    assert any(o.startswith(("global_load", "buffer_load", "flat_load")) for o in ops)
    assert any(o.startswith("ds_") for o in ops)  # tiles staged in LDS (shared memory)
    assert any(o.startswith("s_barrier") for o in ops)


def test_fp16_residual_chain_builds_for_gfx942(built):
    cg = built("gfx942", kind="residual", dtype="float16", c=16, k=16, hw=14)
    obj = read_code_object(code_objects(cg.kernels[0].module)[0])
    assert obj.arch == "gfx942" and len(obj.kernels) == 1


def test_kernel_source_is_its_amdgpu_assembly_and_llvm_ir(built):
    cg = built("gfx942", kind="bn", c=16, k=16, hw=14)
    asm = cg.source("asm")
    assert '.amdgcn_target "amdgcn-amd-amdhsa' in asm and "gfx942" in asm
    assert re.search(r"^main_kernel:", asm, re.M)
    assert cg.source() == asm  # a rocm graph's default source
    ll = cg.source("llvm")
    assert 'target triple = "amdgcn-amd-amdhsa' in ll and "define" in ll and "main_kernel" in ll


# -- without the toolchain ---------------------------------------------------------------------
@pytest.fixture
def rocm_without_toolchain():
    """Stand-ins for the two ROCm-install steps of TVM's AMDGPU build (device-library
    bitcode and the ld.lld link), so lowering to AMDGPU code is checked on any machine."""
    import tvm_ffi

    names = ("tvm_callback_rocm_bitcode_path", "tvm_callback_rocm_link")
    old = {n: tvm_ffi.get_global_func(n, allow_missing=True) for n in names}
    tvm_ffi.register_global_func(names[0], lambda *a: [], override=True)
    tvm_ffi.register_global_func(names[1], lambda obj: obj, override=True)
    yield
    for n, f in old.items():
        if f is not None:
            tvm_ffi.register_global_func(n, f, override=True)


@pytest.mark.skipif(not _llvm_has_amdgpu(), reason="TVM's LLVM has no AMDGPU backend")
@pytest.mark.parametrize("kind", ["bn", "residual"])
def test_rocm_lowers_conv_chain_to_amdgpu(rocm_without_toolchain, kind):
    cg = tefuse.build(conv_chain(kind=kind, c=16, k=16, hw=14), "rocm")
    assert cg.num_kernels == 1
    asm = cg.source("asm")
    assert '.amdgcn_target "amdgcn-amd-amdhsa' in asm and "gfx90a" in asm
    assert re.search(r"^main_kernel:", asm, re.M)


@pytest.mark.skipif(not _llvm_has_amdgpu(), reason="TVM's LLVM has no AMDGPU backend")
def test_rocm_error_without_device_libraries_is_clear(tmp_path, monkeypatch):
    monkeypatch.setenv("ROCM_PATH", str(tmp_path))  # nothing there
    with pytest.raises(tefuse.BuildError, match=r"compiling for rocm failed: .*ROCm toolchain: no device-library"):
        tefuse.build(conv_chain(kind="bn", c=8, k=8, hw=6), "rocm")


def test_debian_device_libraries_are_found_without_rocm_path(tmp_path, monkeypatch):
    from tefuse import target

    bc = tmp_path / "usr" / "lib" / "x86_64-linux-gnu" / "amdgcn" / "bitcode"
    bc.mkdir(parents=True)
    (bc / "ocml.bc").write_bytes(b"BC")
    monkeypatch.setattr(target, "ROCM_BITCODE_DIRS", (str(tmp_path / "usr/lib/*/amdgcn/bitcode"),))
    monkeypatch.setattr(target, "_rocm_install", lambda: os.environ.get("ROCM_PATH"))
    # set, then deleted: monkeypatch then also removes the ROCM_PATH that ensure_rocm_toolchain sets
    # here, which would otherwise send this worker's later ROCm builds to this fake prefix
    monkeypatch.setenv("ROCM_PATH", "")
    monkeypatch.delenv("ROCM_PATH")
    target.ensure_rocm_toolchain()
    assert os.environ["ROCM_PATH"] == str(tmp_path / "usr" / "lib" / "x86_64-linux-gnu")


# -- the command line --------------------------------------------------------------------------
CHAIN = ["build", "conv2d(k=16,r=3,pad=1)+bias+batch_norm+relu", "-i", "1x16x14x14", "-t", "rocm:gfx942",
         "--no-db", "--no-cache"]


def test_cli_build_emits_amdgpu_asm_and_llvm_ir(toolchain, capsys):
    from tefuse.cli import main

    assert main(CHAIN + ["-e", "asm"]) == 0
    asm = capsys.readouterr().out
    assert '.amdgcn_target "amdgcn-amd-amdhsa' in asm and "gfx942" in asm
    assert len(re.findall(r"^main_kernel:", asm, re.M)) == 1 and "s_endpgm" in asm
    assert main(CHAIN + ["-e", "llvm"]) == 0
    ll = capsys.readouterr().out
    assert 'target triple = "amdgcn-amd-amdhsa' in ll and "amdgpu_kernel" in ll


def test_cli_build_saves_a_rocm_artefact_that_loads_only_with_a_rocm_runtime(toolchain, tmp_path, capsys):
    import tarfile

    import tvm

    from tefuse.cli import main
    from tefuse.codegen.rocm import find_code_objects
    from tefuse.runtime import artifact

    out = tmp_path / "conv.tefuse"
    assert main(CHAIN + ["-o", str(out)]) == 0
    assert f"saved 1 kernels and 0 constants to {out}" in capsys.readouterr().err
    with tarfile.open(out) as tar:
        names = tar.getnames()
        lib = tar.extractfile("kernels/k000.so").read()
        src = tar.extractfile("kernels/k000.src").read().decode()
    assert {"plan.json", "constants.npz", "kernels/k000.so", "kernels/k000.src"} <= set(names)
    (co,) = find_code_objects(lib)
    assert read_code_object(co).arch == "gfx942" and read_code_object(co).kernels == ("main_kernel",)
    assert re.search(r"^main_kernel:", src, re.M)
    if tvm.get_global_func("ffi.Module.load_from_bytes.hip", allow_missing=True) is not None:
        pytest.skip("this TVM has a ROCm runtime: the artefact would load")
    with pytest.raises(artifact.ArtifactError, match=r"k000\.so holds ROCm \(HIP\) device code and this TVM "
                                                      r"has no runtime for it") as err:
        artifact.load(out)
    assert "\n" not in str(err.value)
    assert main(["run", str(out)]) == 1  # a TefuseError (ArtifactError): exit 1, one line
    errs = capsys.readouterr().err.strip().splitlines()
    assert len(errs) == 1 and "no runtime for it" in errs[0], errs
