"""Spot availability replayed from traces, or from a two-state model calibrated to them.

Trace format (Can't Be Late / SpotHedge): ``{"metadata": {"gap_seconds": G}, "data": [n0, n1, ...]}``,
one value per tick: how many spot instances could be obtained or kept; 0 = unavailable/preempted.
The traces carry no licence, so Burster does not ship them: it reads them from ../shared/data when
present and otherwise uses ``spot_model.json`` (per-trace mean availability and mean up / down run
lengths, statistics computed by ``calibrate``) to drive a seeded two-state Markov model.
Offerings borrow a series deterministically: same provider and GPU model first, then same GPU model,
then any series (stable hash of the offering key), an assumption stated in docs/simulation.md.
"""

from __future__ import annotations

import bisect
import functools
import json
import random
import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from burster.errors import InputError
from burster.model import Offering

TRACE_GLOBS = (
    ("skypilot_spot_traces/availability/1-node/aws-02-15-2023", "aws", "V100"),
    ("skypilot_spot_traces/availability/1-node/aws-10-26-2022", "aws", ""),
    ("skypilot_spot_traces/availability/16-node/aws-08-27-2023", "aws", "V100"),
    ("spothedge_gcp_a100/GCP1", "gcp", "A100"),
)


@dataclass(frozen=True)
class SpotSeries:
    name: str
    provider: str
    gpu_model: str
    gap_s: float
    data: tuple[int, ...]

    @property
    def span_s(self) -> float:
        return self.gap_s * len(self.data)

    def available(self, offset_s: float) -> bool:
        return self.data[int(offset_s // self.gap_s) % len(self.data)] > 0

    @functools.cached_property
    def _drop_offsets(self) -> list[float]:  # per instance: two series may share a name
        return self.drops()

    @functools.cached_property
    def _flip_offsets(self) -> list[float]:
        d = self.data
        return [i * self.gap_s for i in range(len(d)) if (d[i] > 0) != (d[i - 1] > 0)]

    def drops(self) -> list[float]:
        """Offsets (within one span) where availability falls to 0."""
        d = self.data
        return [i * self.gap_s for i in range(len(d)) if d[i] == 0 and d[i - 1] > 0]

    def next_drop(self, offset_s: float) -> float:
        """The first offset >= ``offset_s`` at which availability falls to 0 (inf if never)."""
        return self._next(self._drop_offsets, offset_s, bisect.bisect_left)

    def next_flip(self, offset_s: float) -> float:
        """The first offset > ``offset_s`` at which availability changes (up <-> down; inf if never)."""
        return self._next(self._flip_offsets, offset_s, bisect.bisect_right)

    def _next(self, offsets: list[float], offset_s: float, find: Callable[[list[float], float], int]) -> float:
        """The next of ``offsets`` (within one span, sorted) after ``offset_s``, the series repeating."""
        if not offsets:
            return float("inf")
        span = self.span_s
        cycle, within = divmod(offset_s, span)
        i = find(offsets, within)
        if i < len(offsets):
            return cycle * span + offsets[i]
        return (cycle + 1) * span + offsets[0]


def _gpu_of(filename: str, default: str) -> str:
    if default:
        return default
    return "K80" if "k80" in filename else "V100" if "v100" in filename else ""


def load_series(shared_data: Path) -> list[SpotSeries]:
    """Every staged spot availability trace under ``shared_data`` (empty if none are there)."""
    out = []
    for sub, provider, gpu in TRACE_GLOBS:
        folder = shared_data / sub
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
            out.append(read_series(path, provider, _gpu_of(path.name, gpu)))
    return out


def _count(v: object) -> bool:
    """True for a whole number >= 0 (``1`` or ``1.0``; not ``true``, ``0.5`` or ``"1"``)."""
    return (isinstance(v, int) and not isinstance(v, bool) and v >= 0) or (
        isinstance(v, float) and v.is_integer() and v >= 0)


MAX_GAP_S = 86_400  # one value per day at most: a longer tick is not an availability trace


def read_series(path: Path, provider: str, gpu_model: str) -> SpotSeries:
    """One trace file; an InputError naming the file and the fix when it is not a valid trace."""
    shape = "{metadata: {gap_seconds: G}, data: [n0, n1, ...]}"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        gap, data = doc["metadata"]["gap_seconds"], doc["data"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as err:
        detail = "JSON nested too deeply" if isinstance(err, RecursionError) else \
            f"no key {err}" if isinstance(err, KeyError) else str(err)
        raise InputError(f"{path}: not a spot trace ({shape}): {detail}") from None
    if isinstance(gap, bool) or not isinstance(gap, int | float) or not 0 < gap <= MAX_GAP_S:
        raise InputError(f"{path}: metadata.gap_seconds is {json.dumps(gap)}; it must be seconds per value in "
                         f"(0, {MAX_GAP_S}] (the staged traces use 30 to 600)")
    if not isinstance(data, list) or not data:
        raise InputError(f"{path}: data must be a non-empty list of instance counts (integers >= 0), "
                         f"not {json.dumps(data)[:40]}")
    bad = next((i for i, v in enumerate(data) if not _count(v)), None)
    if bad is not None:
        raise InputError(f"{path}: data[{bad}] is {json.dumps(data[bad])}; every value must be an instance count "
                         "(an integer >= 0)")
    return SpotSeries(f"{path.parent.name}/{path.stem}", provider, gpu_model, float(gap),
                      tuple(int(v) for v in data))


def calibrate(series: Sequence[SpotSeries]) -> list[dict[str, object]]:
    """Published-statistics summary of each series: what the bundled model ships."""
    out: list[dict[str, object]] = []
    for s in series:
        runs: dict[bool, list[int]] = {True: [], False: []}
        cur, n = s.data[0] > 0, 0
        for v in s.data:
            if (v > 0) == cur:
                n += 1
            else:
                runs[cur].append(n)
                cur, n = v > 0, 1
        runs[cur].append(n)
        mean = {k: (sum(v) / len(v) if v else 0.0) for k, v in runs.items()}
        out.append({
            "name": s.name, "provider": s.provider, "gpu_model": s.gpu_model, "gap_s": s.gap_s,
            "ticks": len(s.data), "availability": round(sum(v > 0 for v in s.data) / len(s.data), 4),
            "mean_up_s": round(mean[True] * s.gap_s, 1), "mean_down_s": round(mean[False] * s.gap_s, 1),
        })
    return out


def synthesize(stats: Sequence[dict[str, object]], seed: int) -> list[SpotSeries]:
    """Two-state Markov series matching each entry's mean up and down run lengths."""
    out = []
    for entry in stats:
        rng = random.Random(f"{seed}:{entry['name']}")
        gap = float(entry["gap_s"])  # type: ignore[arg-type]
        p_fail = min(1.0, gap / max(float(entry["mean_up_s"]), gap))  # type: ignore[arg-type]
        down = float(entry["mean_down_s"])  # type: ignore[arg-type]
        p_back = min(1.0, gap / max(down, gap)) if down > 0 else 1.0
        up = rng.random() < float(entry["availability"])  # type: ignore[arg-type]
        data = []
        for _ in range(int(entry["ticks"])):  # type: ignore[call-overload]
            data.append(1 if up else 0)
            up = (rng.random() >= p_fail) if up else (rng.random() < p_back)
        out.append(SpotSeries(f"model:{entry['name']}:seed{seed}", str(entry["provider"]), str(entry["gpu_model"]),
                              gap, tuple(data)))
    return out


def series_for(offering: Offering, series: Sequence[SpotSeries]) -> SpotSeries | None:
    """The availability series an offering replays (deterministic)."""
    if not series:
        return None
    for pick in (lambda s: s.provider == offering.provider and s.gpu_model == offering.gpu_model,
                 lambda s: s.gpu_model == offering.gpu_model, lambda s: True):
        cands = [s for s in series if pick(s)]
        if cands:
            return cands[zlib.crc32(offering.key.encode()) % len(cands)]
    return None


def load_series_path(path: Path) -> list[SpotSeries]:
    """A user's spot trace: one JSON file, or every ``*.json`` under a folder (same format).

    The cloud and GPU model are read from the path when it names them (``aws``/``gcp``/``azure``,
    ``v100``/``a100``/``h100``/...); otherwise the series serves any offering. A folder laid out like
    ../shared/data (``TRACE_GLOBS``) gives exactly the series the default gives: naming the default
    folder must not change a run (its CPU-instance preemption traces are not GPU availability).
    """
    if path.is_file():
        files = [path]
    elif path.is_dir():
        curated = load_series(path)
        if curated:
            return curated
        files = [f for f in sorted(path.rglob("*.json")) if not _staged_elsewhere(f, path)]
    else:
        raise InputError(f"spot trace {path} does not exist")
    if not files:
        raise InputError(f"no spot trace files (*.json) under {path}")
    out = []
    for f in files:
        staged = _staged_as(f)
        if staged is not None:
            out.append(read_series(f, staged[0], _gpu_of(f.name, staged[1])))
            continue
        # whole words of the folder given and the path below it: "us-east4-c" holds no T4, and the
        # folders above it ("/home/dawson") say nothing
        below = Path(path.name) / f.relative_to(path) if path.is_dir() else Path(f.name)
        words = set(re.split(r"[^a-z0-9]+", below.with_suffix("").as_posix().lower()))
        provider = next((p for p in ("aws", "gcp", "azure") if p in words), "")
        gpu = next((g.upper() for g in ("a100", "h100", "h200", "v100", "k80", "t4", "l4") if g in words), "")
        out.append(read_series(f, provider, gpu))
    return out


_STAGED_ROOTS = ("skypilot_spot_traces", "spothedge_gcp_a100")


def _staged_as(path: Path) -> tuple[str, str] | None:
    """(provider, GPU model) of a file in one of the staged folders ``TRACE_GLOBS`` names, else None."""
    folder = path.parent.as_posix()
    return next(((provider, gpu) for sub, provider, gpu in TRACE_GLOBS if folder.endswith(sub)), None)


def _staged_elsewhere(path: Path, given: Path) -> bool:
    """A file of the staged data sets outside the folders the default uses (e.g. the CPU-instance
    preemption traces), met under a folder ``given`` at or above a staged data set's root: left out,
    so naming ../shared/data or a data set's root gives the default's series. A folder given inside
    a data set (e.g. the V100 preemption traces' own folder) is used whole."""
    if _staged_as(path) is not None:
        return False
    top = len(given.parts) - 1  # the index of the given folder's own name in path.parts
    return any(part in _STAGED_ROOTS for part in path.parts[top:])
