"""Pre-processing bench: crop + resize + normalise pipelines as one tefuse kernel, on a CUDA GPU.

Two cases:

- rgb: a 3840x2160 uint8 RGB image, five rectangles of different sizes (run-time arguments),
  each resized bilinear to 60x60 keeping its aspect ratio (centred, bands the background colour),
  * 1.4, - 0.5, / 255, RGB -> BGR, into one float32 [5, 60, 60, 3] tensor. Timed in turns with
  torchvision.transforms.v2.functional on CUDA tensors doing the same per rectangle (crop, resize
  with antialias=False, pad, normalize, flip): both as CUDA graphs if torchvision's calls can be
  captured (its normalize copies mean and std to the device at each call), else both eagerly.
- nv12: a 4K NV12 frame (Y [2160, 3840], UV [1080, 3840]), four rectangles -> RGB (BT.601
  limited) -> bilinear 224x224 -> ImageNet normalisation -> planar float32 [4, 3, 224, 224].
  Timed in turns with a device-to-device copy of the bytes it must move (the source bytes its
  filter windows touch plus the output); the bound those bytes give at the copy bandwidth of a
  1 GiB copy is reported beside it.

Every result is checked against the numpy reference below before it is timed; the rgb case also
runs new rectangles on the same compiled graph. The case construction imports only numpy and
tefuse's graph builder, so it runs without a GPU (tests/bench/test_preprocess.py);
torch and torchvision are imported when timing.

    python -m tefuse.bench.preprocess --json benchmarks/preprocess.json [--fkl FKL_CHECKOUT]

With `--fkl`, the rgb case is also timed against the Fused Kernel Library's own build of the
same example (bench/fkl.py: FKL's headers compiled with nvcc on the machine that runs the bench,
launched on the same stream, in the same turns).
"""
from __future__ import annotations

import argparse
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from ..graph.ir import Graph, GraphBuilder
from .runs import write_json_whole
from .timing import device_kernels

log = logging.getLogger(__name__)

RGB_IMAGE = (2160, 3840, 3)
RGB_RECTS = ((0, 0, 34, 25), (10, 10, 70, 15), (20, 20, 60, 59), (30, 30, 20, 23), (40, 40, 12, 11))
RGB_RECTS_AGAIN = ((100, 7, 50, 51), (3000, 2000, 840, 160), (9, 900, 16, 90), (1, 1, 1, 1), (400, 300, 61, 59))
RGB_SIZE = (60, 60)
MUL, SUB, DIV = 1.4, 0.5, 255.0
BACKGROUND = (128.0, 64.0, 32.0)

NV12_FRAME = (2160, 3840)
NV12_RECTS = ((0, 0, 1920, 1080), (1920, 0, 1920, 1080), (0, 1080, 1920, 1080), (1000, 500, 1280, 720))
NV12_SIZE = (224, 224)
IMAGENET_MEAN = tuple(255 * m for m in (0.485, 0.456, 0.406))
IMAGENET_STD = tuple(255 * s for s in (0.229, 0.224, 0.225))


@dataclass
class PreprocessCase:
    """A pipeline's graph, its inputs, the expected output (numpy) and the bytes a kernel must
    move: `touched` the source bytes the filter windows read plus the output, `whole` the
    rectangles' source bytes plus the output."""

    name: str
    graph: Graph
    feeds: dict[str, np.ndarray]
    expected: np.ndarray
    touched: int
    whole: int
    expected_again: Optional[np.ndarray] = None  # the output for RGB_RECTS_AGAIN, where the case has it
    sectors: int = 0  # `touched` counted in the 32-byte sectors the memory system moves (nv12)


# -- numpy reference --------------------------------------------------------------------------
def fit(w: int, h: int, ow: int, oh: int) -> tuple[int, int]:
    """(th, tw): a w x h rectangle scaled to height oh, its width rounded half up, or, where that
    is wider than ow, to width ow, its height rounded half up (crop_resize's keep_aspect_ratio)."""
    by_height = (2 * oh * w + h) // (2 * h)
    if by_height > ow:
        return max((2 * ow * h + w) // (2 * w), 1), ow
    return oh, max(by_height, 1)


def _taps(n_out: int, src: int, coordinate: str = "half_pixel") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bilinear along one axis, half_pixel or asymmetric: (lower index, upper index, upper
    weight), the indices clamped to [0, src)."""
    i = np.arange(n_out)
    s = i * src / n_out if coordinate == "asymmetric" else (i + 0.5) * src / n_out - 0.5
    f = np.floor(s)
    return np.clip(f, 0, src - 1).astype(np.int64), np.clip(f + 1, 0, src - 1).astype(np.int64), s - f


def crop_resize_reference(read: Callable[[np.ndarray, np.ndarray], np.ndarray], shape: tuple[int, int],
                          rects: Sequence[Sequence[int]], size: tuple[int, int], keep: bool,
                          background: Sequence[float], coordinate: str = "half_pixel") -> np.ndarray:
    """[n, oh, ow, C] float64: each rectangle resized bilinear (half_pixel) to `size`, or with
    `keep` to its fit centred on `background`; read(rows, cols) gives the pixels [..., C]."""
    oh, ow = size
    H, W = shape
    out = []
    for x, y, w, h in rects:
        w, h = max(w, 1), max(h, 1)
        th, tw = fit(w, h, ow, oh) if keep else (oh, ow)
        y0, x0 = (oh - th) // 2, (ow - tw) // 2
        r0, r1, ry = _taps(th, h, coordinate)
        c0, c1, rx = _taps(tw, w, coordinate)
        rows = [np.clip(r + y, 0, H - 1)[:, None] for r in (r0, r1)]
        cols = [np.clip(c + x, 0, W - 1)[None, :] for c in (c0, c1)]
        ry, rx = ry[:, None, None], rx[None, :, None]
        v = ((1 - ry) * ((1 - rx) * read(rows[0], cols[0]) + rx * read(rows[0], cols[1]))
             + ry * ((1 - rx) * read(rows[1], cols[0]) + rx * read(rows[1], cols[1])))
        plane = np.empty((oh, ow, v.shape[-1]))
        plane[...] = np.asarray(background, np.float64)
        plane[y0:y0 + th, x0:x0 + tw] = v
        out.append(plane)
    return np.stack(out)


def nv12_reader(y: np.ndarray, uv: np.ndarray) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """read(rows, cols) -> RGB [..., 3] of an NV12 frame, BT.601 limited range (published matrix)."""
    def read(rows, cols):
        rows, cols = np.broadcast_arrays(rows, cols)
        yy = (y[rows, cols].astype(np.float64) - 16) * 1.164384
        u = uv[rows // 2, cols // 2 * 2].astype(np.float64) - 128
        v = uv[rows // 2, cols // 2 * 2 + 1].astype(np.float64) - 128
        rgb = np.stack([yy + 1.596027 * v, yy - 0.391762 * u - 0.812968 * v, yy + 2.017232 * u], -1)
        return np.clip(rgb, 0, 255)
    return read


def _touched(rects, size, keep: bool, bytes_per_pixel: Callable[[set, set], int]) -> int:
    """Source bytes the bilinear windows of every rectangle read (each rectangle on its own)."""
    total = 0
    for x, y, w, h in rects:
        th, tw = fit(w, h, size[1], size[0]) if keep else size
        rows = {int(i) + y for r in _taps(th, h)[:2] for i in r}
        cols = {int(i) + x for c in _taps(tw, w)[:2] for i in c}
        total += bytes_per_pixel(rows, cols)
    return total


SECTOR = 32  # bytes: the unit in which DRAM and L2 deliver data to the SMs


def nv12_sectors(rows: set, cols: set) -> int:
    """The 32-byte sectors of an NV12 frame (rows a whole number of sectors wide) that hold the
    Y bytes (rows x cols) and the UV pairs of their 2x2 blocks, in bytes. A 1920 -> 224 window
    reads 2 bytes every 8.6: its bytes are a quarter of the sectors they sit in, which no kernel
    can read in less."""
    y = len(rows) * len({c // SECTOR for c in cols})
    uv = len({r // 2 for r in rows}) * len({(c // 2 * 2 + k) // SECTOR for c in cols for k in (0, 1)})
    return SECTOR * (y + uv)


# -- the cases --------------------------------------------------------------------------------
def rgb_graph(n: int = len(RGB_RECTS), image=RGB_IMAGE, size=RGB_SIZE, coordinate: str = "half_pixel") -> Graph:
    """crop_resize (keep aspect ratio) -> normalize -> rgb2bgr: [n, *size, 3] float32."""
    b = GraphBuilder()
    img = b.input("image", image, "uint8")
    rects = b.input("rects", (n, 4), "int32")
    r = b.crop_resize(img, rects, size=size, mode="linear", keep_aspect_ratio=True, background=BACKGROUND,
                      coordinate=coordinate)
    return b.build(b.color_convert(b.normalize(r, mul=MUL, sub=SUB, div=DIV), code="rgb2bgr"))


def rgb_expected(image: np.ndarray, rects, size=RGB_SIZE, coordinate: str = "half_pixel") -> np.ndarray:
    planes = crop_resize_reference(lambda r, c: image[r, c].astype(np.float64), image.shape[:2], rects, size,
                                   True, BACKGROUND, coordinate)
    return ((planes * MUL - SUB) / DIV)[..., ::-1].astype(np.float32)


def rgb_case(seed: int = 0, image=RGB_IMAGE, rects=RGB_RECTS, again=RGB_RECTS_AGAIN,
             size=RGB_SIZE, coordinate: str = "half_pixel") -> PreprocessCase:
    img = np.random.default_rng(seed).integers(0, 256, image, dtype=np.uint8)
    out_bytes = len(rects) * size[0] * size[1] * 3 * 4
    touched = _touched(rects, size, True, lambda r, c: 3 * len(r) * len(c)) + out_bytes
    whole = sum(3 * w * h for _, _, w, h in rects) + out_bytes
    return PreprocessCase("rgb", rgb_graph(len(rects), image, size, coordinate),
                          {"image": img, "rects": np.asarray(rects, np.int32)}, rgb_expected(img, rects, size, coordinate),
                          touched, whole, rgb_expected(img, again, size, coordinate) if again else None)


def nv12_graph(n: int = len(NV12_RECTS), frame=NV12_FRAME, size=NV12_SIZE) -> Graph:
    """nv12_to_rgb -> crop_resize -> normalize -> NCHW: [n, 3, *size] float32; one kernel in
    which each output pixel converts only the source pixels its window reads."""
    b = GraphBuilder()
    y = b.input("y", frame, "uint8")
    uv = b.input("uv", (frame[0] // 2, frame[1]), "uint8")
    rects = b.input("rects", (n, 4), "int32")
    rgb = b.nv12_to_rgb(y, uv, standard="bt601", range="limited")
    r = b.crop_resize(rgb, rects, size=size, mode="linear")
    return b.build(b.transpose(b.normalize(r, sub=IMAGENET_MEAN, div=IMAGENET_STD), axes=(0, 3, 1, 2)))


def nv12_case(seed: int = 0, frame=NV12_FRAME, rects=NV12_RECTS, size=NV12_SIZE) -> PreprocessCase:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 256, frame, dtype=np.uint8)
    uv = rng.integers(0, 256, (frame[0] // 2, frame[1]), dtype=np.uint8)
    planes = crop_resize_reference(nv12_reader(y, uv), frame, rects, size, False, (0.0, 0.0, 0.0))
    expected = ((planes - IMAGENET_MEAN) / IMAGENET_STD).transpose(0, 3, 1, 2).astype(np.float32)
    out_bytes = expected.size * 4
    touched = _touched(rects, size, False,
                       lambda r, c: len(r) * len(c) + 2 * len({i // 2 for i in r}) * len({i // 2 for i in c}))
    return PreprocessCase("nv12", nv12_graph(len(rects), frame, size),
                          {"y": y, "uv": uv, "rects": np.asarray(rects, np.int32)}, expected,
                          touched + out_bytes, sum(w * h * 3 // 2 for _, _, w, h in rects) + out_bytes,
                          sectors=_touched(rects, size, False, nv12_sectors) + out_bytes)


# -- timing (CUDA) ----------------------------------------------------------------------------
@dataclass
class Row:
    case: str
    tefuse_ms: float
    num_kernels: int
    max_error: float
    peer: str = ""
    peer_ms: Optional[float] = None
    peer_max_error: Optional[float] = None
    bound_ms: Optional[float] = None
    extra: dict = field(default_factory=dict)

    @property
    def ratio(self) -> Optional[float]:
        """tefuse's time over the peer's (or over the bound): below 1, tefuse is faster."""
        ref = self.peer_ms if self.peer_ms is not None else self.bound_ms
        return self.tefuse_ms / ref if ref else None


def _check(what: str, got: np.ndarray, want: np.ndarray, atol: float) -> float:
    err = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max())
    if not err <= atol:
        raise AssertionError(f"{what}: max error {err:.3g} against the numpy reference (allowed {atol})")
    return err


def _tefuse_run(torch, case: PreprocessCase, target: str):
    """(compiled graph, device feeds, output buffer, run): run() computes into the buffer on
    torch's current stream (capturable into a CUDA graph)."""
    import tefuse

    cg = tefuse.build(case.graph, target)
    feeds = {k: torch.from_numpy(v).cuda() for k, v in case.feeds.items()}
    out = torch.empty(case.expected.shape, dtype=torch.float32, device="cuda")

    def run():
        cg.run(feeds, out=[out], stream=torch.cuda.current_stream())

    return cg, feeds, out, run


def copy_bandwidth(torch, nbytes: int = 1 << 30) -> float:
    """Device-to-device copy bandwidth in bytes/s (bytes read + written per second)."""
    from .timing import time_graph

    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = time_graph(lambda: dst.copy_(src), repeat=10, inner=5)
    return 2 * nbytes / (ms * 1e-3)


def torchvision_rgb(torch, image, rects: Sequence[Sequence[int]], size=RGB_SIZE):
    """The rgb pipeline per rectangle with torchvision.transforms.v2.functional: crop, resize
    (bilinear, antialias=False), pad to the centred fit, normalize, RGB -> BGR."""
    from torchvision.transforms.v2 import InterpolationMode
    from torchvision.transforms.v2 import functional as F

    chw = image.permute(2, 0, 1)
    oh, ow = size
    mean, std = [SUB / MUL] * 3, [DIV / MUL] * 3  # (x * mul - sub) / div as (x - mean) / std
    out = torch.empty((len(rects), oh, ow, 3), dtype=torch.float32, device=image.device)
    fits = [fit(w, h, ow, oh) for _, _, w, h in rects]

    def run():
        for k, ((x, y, w, h), (th, tw)) in enumerate(zip(rects, fits)):
            crop = F.crop(chw, y, x, h, w).float()
            r = F.resize(crop, [th, tw], interpolation=InterpolationMode.BILINEAR, antialias=False)
            top, left = (oh - th) // 2, (ow - tw) // 2
            r = F.pad(r, [left, top, ow - tw - left, oh - th - top], fill=list(BACKGROUND))
            r = F.normalize(r, mean, std)
            out[k] = r.flip(0).permute(1, 2, 0)

    return out, run


def timed_in_turns(torch, fns: dict[str, Callable[[], None]], eager: Sequence[str] = (),
                   rounds: int = 3) -> tuple[dict, dict]:
    """({name: best ms}, {name: how}) of each function, timed in turns over `rounds` so that clock
    ramps and neighbours weigh on all: as a CUDA graph (time_graph) where it can be captured,
    eagerly with the device synchronised per call (time_wall, launches included) where it
    cannot or where `eager` names it."""
    from .timing import time_graph, time_wall

    best: dict[str, float] = {}
    how = {name: "eager" if name in eager else "graph" for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            ms = None
            if how[name] == "graph":
                try:
                    ms = time_graph(fn)
                except Exception as e:  # noqa: BLE001 - one that cannot be captured runs eagerly
                    log.info("%s: not capturable as a CUDA graph (%s); timed eagerly", name,
                             (str(e).strip().splitlines() or [type(e).__name__])[-1][:120])
                    torch.cuda.synchronize()
                    how[name] = "eager"
            if ms is None:
                ms = time_wall(fn, torch.cuda.synchronize)
            best[name] = min(best.get(name, float("inf")), ms)
    return best, how


def bench_rgb(torch, target: str, fkl=None) -> list[Row]:
    """tefuse's one kernel against torchvision, each timed as the other is: both as CUDA graphs
    where torchvision's calls can be captured, else both eagerly (tefuse's graph time is kept in
    the row's extra either way); and, given FKL's built example (bench/fkl.py), against FKL's
    kernel on the same image and stream, both as CUDA graphs, in the same turns."""
    case = rgb_case()
    cg, feeds, out, run = _tefuse_run(torch, case, target)
    run()
    torch.cuda.synchronize()
    err = _check("tefuse rgb", out.cpu().numpy(), case.expected, 1e-4)
    again = torch.from_numpy(np.asarray(RGB_RECTS_AGAIN, np.int32)).cuda()
    cg.run({**feeds, "rects": again}, out=[out], stream=torch.cuda.current_stream())
    torch.cuda.synchronize()
    err_again = _check("tefuse rgb, new rectangles", out.cpu().numpy(), case.expected_again, 1e-4)
    peer_out, peer = torchvision_rgb(torch, feeds["image"], RGB_RECTS)
    peer()
    torch.cuda.synchronize()
    peer_err = _check("torchvision rgb", peer_out.cpu().numpy(), case.expected, 1e-4)
    fns = {"tefuse": run, "tefuse_eager": run, "torchvision": peer}
    if fkl is not None:
        # FKL's Resize maps an output pixel x to the source x * scale (ONNX's asymmetric transform),
        # not OpenCV's half-pixel centres: it is timed against tefuse computing the same values
        asym = rgb_case(coordinate="asymmetric")
        acg, _, aout, fns["tefuse_asymmetric"] = _tefuse_run(torch, asym, target)
        fkl_out, fns["fkl"] = _fkl_run(torch, fkl, feeds["image"])
        fns["tefuse_asymmetric"]()
        fns["fkl"]()
        torch.cuda.synchronize()
        asym_err = _check("tefuse rgb, asymmetric", aout.cpu().numpy(), asym.expected, 1e-4)
        fkl_err = _check("FKL rgb, asymmetric", fkl_out.cpu().numpy(), asym.expected, 1e-4)
    ms, how = timed_in_turns(torch, fns, eager=("tefuse_eager",))
    kernels_of = {k: device_kernels(torch, fns[k], runs=20) for k in ("tefuse", "tefuse_asymmetric", "fkl") if k in fns}
    mine = ms["tefuse"] if how["torchvision"] == "graph" else ms["tefuse_eager"]
    kernels = [k.template for k in cg.kernels]
    rows = [Row("rgb 4K crops x5 -> 60x60", mine, cg.num_kernels, err, "torchvision.v2", ms["torchvision"],
                peer_err, extra={"new_rects_max_error": err_again, "timed_as": how["torchvision"],
                                 "tefuse_graph_ms": ms["tefuse"], "tefuse_eager_ms": ms["tefuse_eager"],
                                 "kernels": kernels, "device_kernels": kernels_of["tefuse"]})]
    if fkl is not None:
        rows.append(Row("rgb 4K crops x5 -> 60x60, asymmetric (FKL)", ms["tefuse_asymmetric"], acg.num_kernels,
                        asym_err, "FKL", ms["fkl"], fkl_err,
                        extra={"timed_as": how["fkl"], "kernels": [k.template for k in acg.kernels],
                               "tefuse_half_pixel_ms": ms["tefuse"],
                               "device_kernels": kernels_of["tefuse_asymmetric"],
                               "peer_device_kernels": kernels_of["fkl"]}))
    return rows


def _fkl_run(torch, fkl, image):
    """(output, run): FKL's example over `image` (a device [H, W, 3] uint8 tensor) on torch's
    current stream, for RGB_RECTS, which must be the rectangles FKL's build holds."""
    if tuple(map(tuple, fkl.rects())) != tuple(map(tuple, RGB_RECTS)):
        raise ValueError(f"FKL's example crops {fkl.rects()}, the bench {list(RGB_RECTS)}")
    h, w, _ = image.shape
    out = torch.empty((len(RGB_RECTS), *RGB_SIZE, 3), dtype=torch.float32, device=image.device)

    def run():
        fkl.run(image.data_ptr(), w, h, image.stride(0), out.data_ptr(), BACKGROUND,
                torch.cuda.current_stream().cuda_stream)

    return out, run


def bench_nv12(torch, target: str, bandwidth: float) -> Row:
    """tefuse's kernel against a device-to-device copy of the bytes it must move (the source
    bytes its windows touch plus its output: half read, half written), both as CUDA graphs in
    the same turns, so the copy pays the same launch and ramp a kernel this small does; the
    bound at the copy bandwidth of a 1 GiB copy is kept beside it (bound_ms), and the same for
    the bytes counted in whole 32-byte sectors (sector_bound_ms: what the memory system must
    move for those windows, the roofline's bytes)."""
    case = nv12_case()
    cg, feeds, out, run = _tefuse_run(torch, case, target)
    run()
    torch.cuda.synchronize()
    err = _check("tefuse nv12", out.cpu().numpy(), case.expected, 1e-3)
    src = torch.empty(case.touched // 2, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    fns = {"tefuse": run, "copy": lambda: dst.copy_(src)}
    ms, how = timed_in_turns(torch, fns)
    return Row("nv12 4K crops x4 -> 3x224x224", ms["tefuse"], cg.num_kernels, err, "copy of the touched bytes",
               peer_ms=ms["copy"], bound_ms=1e3 * case.touched / bandwidth,
               extra={"touched_bytes": case.touched, "rect_bytes": case.whole,
                      "ratio_to_bound": ms["tefuse"] / (1e3 * case.touched / bandwidth),
                      "rect_bound_ms": 1e3 * case.whole / bandwidth,
                      "sector_bytes": case.sectors, "sector_bound_ms": 1e3 * case.sectors / bandwidth,
                      "ratio_to_sector_bound": ms["tefuse"] / (1e3 * case.sectors / bandwidth),
                      "timed_as": how["tefuse"],
                      "kernels": [k.template for k in cg.kernels],
                      "device_kernels": device_kernels(torch, run, runs=20),
                      "peer_device_kernels": device_kernels(torch, fns["copy"], runs=20)})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="cuda")
    p.add_argument("--json", default=None)
    p.add_argument("--fkl", default=None, metavar="CHECKOUT",
                   help="a Fused Kernel Library checkout: its README example is built with nvcc "
                        "(bench/fkl.py) and timed beside tefuse's rgb kernel")
    p.add_argument("--fkl-revision", default=None, help="FKL's commit, recorded with the results")
    p.add_argument("--workdir", default=None, help="where FKL's example is built (default: a temporary folder)")
    p.add_argument("--graph-calls", type=int, default=1, metavar="N",
                   help="calls captured into one CUDA graph (N > 1 times back-to-back kernels, not a "
                        "graph launch each: kernels of a few microseconds are otherwise at its floor)")
    args = p.parse_args(argv)
    from . import timing

    try:
        timing.set_graph_calls(args.graph_calls)
    except ValueError as e:
        p.error(f"--graph-calls: {e}")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("preprocess bench: needs a CUDA GPU (torch.cuda.is_available() is False)")
    bandwidth = copy_bandwidth(torch)
    fkl, fkl_info = None, None
    if args.fkl:
        import tempfile

        from . import fkl as fkl_peer

        major, minor = torch.cuda.get_device_capability()
        workdir = Path(args.workdir or tempfile.mkdtemp(prefix="tefuse-fkl-"))
        built = fkl_peer.build(Path(args.fkl), f"sm_{major}{minor}", workdir)
        fkl = fkl_peer.FklExample(built.library)
        fkl_info = {"build": " ".join(built.command), "revision": args.fkl_revision}
    rows = [*bench_rgb(torch, args.target, fkl), bench_nv12(torch, args.target, bandwidth)]
    for r in rows:
        ref = f"{r.peer} {r.peer_ms:.4f} ms" if r.peer_ms is not None else f"{r.peer} {r.bound_ms:.4f} ms"
        log.info("%s: tefuse %.4f ms (%d kernel%s) | %s | ratio %.2fx", r.case, r.tefuse_ms, r.num_kernels,
                 "s" if r.num_kernels != 1 else "", ref, r.ratio)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        import sys

        write_json_whole(args.json, {"command": " ".join(["python -m tefuse.bench.preprocess", *(argv or sys.argv[1:])]),
                                     "device": torch.cuda.get_device_name(), "copy_bandwidth_gbs": bandwidth / 1e9,
                                     "fkl": fkl_info, "timing": {"graph_calls": timing.GRAPH_CALLS}, "rows": [{**asdict(r), "ratio": r.ratio} for r in rows]})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
