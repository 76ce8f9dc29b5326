"""8- and 16-lane vectors of a constant byte as the CUDA codegen can print them: a TIR pass.

Why: TVM 0.27's CUDA codegen holds an int8x8 / int8x16 value in an int2 / int4 and prints a
broadcast constant of that type as `make_int2` / `make_int4` of 8 or 16 chars, which nvcc
refuses ("too many arguments in function call"). A tile copy whose masked lanes are filled with
a value cp.async cannot give (a conv's padding with a nonzero zero point: a uint8 QDQ model's
-128) that stays a plain copy keeps such a fill.

What: on a device function, `Broadcast(c, 8 or 16)` of an 8-bit integer constant becomes
`reinterpret(Broadcast(c * 0x01010101, 2 or 4))`, the same bytes as int32 lanes, which prints as
`make_int4` of four ints read back as the int4. Nothing else changes.
"""
from __future__ import annotations

import tvm
from tvm import tirx
from tvm_ffi import structural_map

from ....ops.value import expr_dtype

PACKED_LANES = (8, 16)


def _packed(b):
    if not isinstance(b.value, tirx.IntImm) or int(b.lanes) not in PACKED_LANES:
        return b
    elem = expr_dtype(b.value)
    dtype = tvm.DataType(elem)
    if dtype.bits != 8 or not dtype.is_integer:
        return b
    word = (int(b.value.value) & 0xFF) * 0x01010101
    word = word - (1 << 32) if word >= 1 << 31 else word
    return tirx.reinterpret(f"{elem}x{int(b.lanes)}",
                            tirx.Broadcast(tirx.IntImm("int32", word), int(b.lanes) // 4))


def pack_byte_vectors(func: tirx.PrimFunc) -> tirx.PrimFunc:
    body = structural_map(func.body, (tirx.Broadcast, _packed))
    return func if body.same_as(func.body) else func.with_body(body)


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tefuse.PackByteVectors")
def PackByteVectors(func, _mod, _ctx):  # noqa: N802 - TVM's pass naming
    return pack_byte_vectors(func)
