"""Transfer tuning: a cost model trained on every tuning record picks an untuned kernel's config.

Why: a kernel no record covers (a new model, a new batch size, a graph pass that changed what it
computes) otherwise gets its template's rule-of-thumb fallback, while the logs hold thousands
of timings of that template's configs on other workloads. One xgboost model per (target,
template) learns, from those timings, how fast each config runs relative to the best one of
its workload (the tuner's target, tuners/xgb.py), from the tuner's knob features and the few
facts a record's workload key holds (tune/features.py). For an unseen workload it scores the
configs that were good elsewhere (the best few of each workload in the logs) beside the
fallback, and the build takes the best-scored one that its space holds.

Trained once per process per log set and kept on disk under the logs' content hash
(tune/model_cache.py); deterministic (one thread, a fixed seed, stable features).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import logging
import math
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from ..schedules.space import Config, ConfigSpace
from .features import KnobSchema, workload_features
from .model_cache import ModelCache
from .record import TuningRecord

log = logging.getLogger(__name__)

#: bump when the features, the target or the training parameters change: cached models go stale
MODEL_VERSION = 1
#: a workload's best configs that become candidates for an unseen workload
TOP_PER_WORKLOAD = 4
NUM_ROUNDS = 160
PARAMS = {"max_depth": 5, "eta": 0.1, "min_child_weight": 1, "subsample": 1.0, "lambda": 1.0,
          "seed": 0, "nthread": 1, "verbosity": 0, "objective": "reg:squarederror"}


@dataclass(frozen=True)
class Sample:
    """One config's measured time on one workload and device (math.inf: it failed)."""

    workload: str
    device: str
    config: dict
    cost: float

    @property
    def group(self) -> tuple[str, str]:
        """What the relative throughput is relative to: timings of one workload on one device."""
        return self.workload, self.device


def samples_by_template(records: Iterable[TuningRecord]) -> dict[tuple[str, str], list[Sample]]:
    """(target, template) -> samples, one per (workload, device, config), its fastest median
    (a config measured again in another log, or distilled into a shipped one, counts once)."""
    best: dict[tuple, Sample] = {}
    for r in records:
        cost = r.median_cost if r.unusable_reason() is None else math.inf
        if r.ok and cost == math.inf:
            continue  # an implausible "success": neither a timing nor a failure of the config
        k = (r.target, r.template, r.workload, r.device, json.dumps(r.config, sort_keys=True))
        if k not in best or cost < best[k].cost:
            best[k] = Sample(r.workload, r.device, r.config, cost)
    out: dict[tuple[str, str], list[Sample]] = {}
    for k in sorted(best):
        out.setdefault(k[:2], []).append(best[k])
    return out


def relative_throughput(samples: Sequence[Sample]) -> np.ndarray:
    """best/cost within each sample's group (failures 0); NaN where the group has fewer than
    two timings, which say nothing about one config against another."""
    groups: dict[tuple[str, str], list[float]] = {}
    for s in samples:
        if math.isfinite(s.cost):
            groups.setdefault(s.group, []).append(s.cost)
    y = []
    for s in samples:
        costs = groups.get(s.group, [])
        y.append(math.nan if len(costs) < 2 else min(costs) / s.cost if math.isfinite(s.cost) else 0.0)
    return np.asarray(y, np.float32)


@dataclass
class TransferModel:
    """One (target, template)'s cost model: a higher score is a faster config."""

    schema: KnobSchema
    booster: Any = field(repr=False)

    def features(self, workload: str, configs: Sequence[dict]) -> np.ndarray:
        wl = np.asarray(workload_features(workload), np.float32)
        rows = [np.concatenate([wl, self.schema.features(c)]) for c in configs]
        return np.stack(rows) if rows else np.zeros((0, len(wl) + len(self.schema.names)), np.float32)

    def scores(self, workload: str, configs: Sequence[dict]) -> np.ndarray:
        if not configs:
            return np.zeros(0, np.float32)
        return self.booster.inplace_predict(self.features(workload, configs))

    @classmethod
    def train(cls, samples: Sequence[Sample]) -> Optional["TransferModel"]:
        """A model of these samples, or None where fewer than two workloads timed two configs."""
        import xgboost as xgb

        y = relative_throughput(samples)
        keep = [k for k in range(len(samples)) if not math.isnan(y[k])]
        if len({samples[k].group for k in keep}) < 2:
            return None
        used = [samples[k] for k in keep]
        schema = KnobSchema.of([s.config for s in used])
        model = cls(schema, None)
        X = np.vstack([model.features(s.workload, [s.config]) for s in used])
        model.booster = xgb.train(dict(PARAMS), xgb.DMatrix(X, label=y[keep]), num_boost_round=NUM_ROUNDS)
        return model

    def to_bytes(self) -> bytes:
        head = json.dumps({"knobs": self.schema.knobs}).encode()
        return len(head).to_bytes(4, "little") + head + bytes(self.booster.save_raw("ubj"))

    @classmethod
    def from_bytes(cls, data: bytes) -> "TransferModel":
        """Raises ValueError where the bytes are no model."""
        import xgboost as xgb

        try:
            n = int.from_bytes(data[:4], "little")
            knobs = tuple((str(name), int(width)) for name, width in json.loads(data[4:4 + n])["knobs"])
            booster = xgb.Booster(params={"nthread": 1})
            booster.load_model(bytearray(data[4 + n:]))
        except (ValueError, KeyError, TypeError, xgb.core.XGBoostError) as e:
            raise ValueError(f"not a transfer model: {e}") from None
        return cls(KnobSchema(knobs), booster)


def candidate_configs(samples: Sequence[Sample], top: int = TOP_PER_WORKLOAD) -> list[dict]:
    """The `top` fastest configs of each group, fastest groups' first, each config once."""
    groups: dict[tuple[str, str], list[Sample]] = {}
    for s in samples:
        if math.isfinite(s.cost):
            groups.setdefault(s.group, []).append(s)
    out: dict[str, dict] = {}
    for g in sorted(groups):
        for s in sorted(groups[g], key=lambda s: s.cost)[:top]:
            out.setdefault(json.dumps(s.config, sort_keys=True), s.config)
    return list(out.values())


def log_set_digest(samples: dict[tuple[str, str], list[Sample]]) -> str:
    """The content hash the disk cache keys models by: the samples, not the files, so the same
    records in other files or another order train the same model."""
    h = hashlib.sha256(f"v{MODEL_VERSION}".encode())
    for (target, template), rows in sorted(samples.items()):
        for s in rows:
            h.update(json.dumps([target, template, s.workload, s.device, s.config, repr(s.cost)],
                                sort_keys=True).encode())
    return h.hexdigest()[:32]


class TransferPredictor:
    """The schedule chooser's ConfigPredictor (codegen/schedule.py) over one set of records."""

    def __init__(self, records: Iterable[TuningRecord], cache: Optional[ModelCache] = None):
        self.samples = samples_by_template(records)
        self.digest = log_set_digest(self.samples)
        self.cache = cache
        self._models: dict[tuple[str, tuple[str, ...]], Optional[TransferModel]] = {}
        self._candidates: dict[tuple[str, tuple[str, ...]], list[dict]] = {}
        self._lock = threading.Lock()

    def _samples(self, target: str, templates: Sequence[str]) -> list[Sample]:
        return [s for t in templates for s in self.samples.get((target, t), [])]

    def model(self, target: str, templates: Sequence[str]) -> Optional[TransferModel]:
        """The model of these templates' records on `target` (a template and the names its
        records were written under): from memory, else the disk cache, else trained now."""
        key = (target, tuple(templates))
        with self._lock:
            if key not in self._models:
                self._models[key] = self._load_or_train(target, tuple(templates))
            return self._models[key]

    def _load_or_train(self, target: str, templates: tuple[str, ...]) -> Optional[TransferModel]:
        samples = self._samples(target, templates)
        if not samples:
            return None
        import xgboost as xgb

        name = hashlib.sha256(json.dumps([self.digest, target, templates, xgb.__version__]).encode())
        entry = f"{templates[0]}-{name.hexdigest()[:24]}"
        data = self.cache.load(entry) if self.cache is not None else None
        if data is not None:
            try:
                return TransferModel.from_bytes(data)
            except ValueError as e:
                log.warning("transfer model %s: %s; training it again", entry, e)
        model = TransferModel.train(samples)
        if model is not None:
            log.debug("trained the transfer model of %s on %s (%d samples)", templates[0], target, len(samples))
            if self.cache is not None:
                self.cache.store(entry, model.to_bytes())
        return model

    def candidates(self, target: str, templates: Sequence[str]) -> list[dict]:
        key = (target, tuple(templates))
        with self._lock:
            if key not in self._candidates:
                self._candidates[key] = candidate_configs(self._samples(target, templates))
            return self._candidates[key]

    def pick(self, workload: str, target: str, templates: Sequence[str], space: ConfigSpace,
             fallback: Config) -> Optional[Config]:
        """The best-scored of the fallback and the configs good on other workloads that this
        space holds and admits; None without a model (no records of the template on the
        target). Ties go to the fallback, then to the config listed first."""
        model = self.model(target, templates)
        if model is None:
            return None
        configs, seen = [fallback], {fallback.index}
        for values in self.candidates(target, templates):
            index = space.find(values)
            if index is not None and index not in seen and space.admits(index):
                seen.add(index)
                configs.append(space.get(index))
        scores = model.scores(workload, [c.values for c in configs])
        return configs[int(np.argmax(scores))]


def read_logs(paths: Iterable[Path]) -> list[TuningRecord]:
    """Records of tuning logs, plain or gzip-compressed JSON lines (the shipped trials); a line
    that does not parse is skipped, a log that cannot be read is logged and skipped."""
    out = []
    for path in paths:
        try:
            data = Path(path).read_bytes()
            if str(path).endswith(".gz"):
                data = gzip.decompress(data)
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            log.warning("tuning log %s: cannot read (%s); the transfer model goes without it", path, e)
            continue
        for line in data.decode("utf-8", "replace").splitlines():
            if line.strip():
                try:
                    out.append(TuningRecord.from_json(line))
                except (ValueError, RecursionError):
                    continue
    return out


_READ: dict[tuple[str, int, int], list[TuningRecord]] = {}
_PREDICTORS: dict[str, TransferPredictor] = {}
_CACHE_LOCK = threading.Lock()


def _read_cached(path: Path) -> list[TuningRecord]:
    try:
        st = path.stat()
    except OSError:
        return []
    key = (str(path), st.st_size, st.st_mtime_ns)
    with _CACHE_LOCK:
        if key not in _READ:
            _READ[key] = read_logs([path])
        return _READ[key]


def transfer_predictor(db: Any = None, logs: Sequence[Path] = (),
                       cache_dir: Optional[Path] = None) -> TransferPredictor:
    """The predictor of a performance database's records (anything with `records()`) and of
    further logs (the shipped trials), one per process per log set: a second build with the
    same logs reuses the models the first one trained. cache_dir: where models are kept on
    disk (default: paths.transfer_model_dir())."""
    from ..paths import transfer_model_dir

    records = list(db.records()) if hasattr(db, "records") else []
    for p in logs:
        records += _read_cached(Path(p))
    fresh = TransferPredictor(records, ModelCache(Path(cache_dir) if cache_dir is not None
                                                  else transfer_model_dir()))
    with _CACHE_LOCK:
        key = f"{fresh.digest}:{fresh.cache.root}"
        return _PREDICTORS.setdefault(key, fresh)
