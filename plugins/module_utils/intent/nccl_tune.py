"""NCCL tuning: the sweep over NCCL_ALGO, NCCL_PROTO, NCCL_BUFFSIZE, NCCL_NTHREADS and
NCCL_NET_GDR_LEVEL with nccl-tests, its decision rule, and the tuned-settings document
that role nccl_env's derivation reads (docs/tuning.md).

The sweep is one pass over the keys, in the order given. Each candidate value of a key
is run ``repeats`` times with every other swept key at its baseline; the metric is
nccl-tests' average bus bandwidth over the size range (GB/s, higher is better). A
candidate is kept only when

- the median of its runs beats the median of the baseline's runs by at least
  ``margin_percent``, and
- its worst run beats the baseline's best run (noise: the two sets of runs do not
  overlap, so the gain is not one lucky run or one unlucky baseline),

and every run of it passed (no nccl-tests failure, no NCCL WARN about the value).
Of several kept values of one key the highest median wins (ties: the first listed);
none kept, the key stays at NCCL's default. A kept value becomes the baseline for the
keys after it (its runs are the new baseline's runs: nothing is measured twice).

The sweep is bounded: at most ``max_runs`` nccl-tests runs and ``time_budget``
seconds; what the bound left out is in the table as not run and decides nothing.

Stdlib only; the runs come through a function, so the logic is tested without mpirun.
"""
import json
import re
import statistics
import time

# The keys the sweep knows, in the order it sweeps them by default.
KEYS = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE", "NCCL_NTHREADS", "NCCL_NET_GDR_LEVEL")
# ncclAlgoStr of NVIDIA/nccl src/init.cc: v2.18 .. v2.22 (6 algorithms); PAT from v2.23.
ALGOS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree")
ALGOS_PAT = ALGOS + ("PAT",)
# ncclProtoStr (every release linerate reads).
PROTOS = ("LL", "LL128", "Simple")
GDR_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS")
# NCCL_NTHREADS: a multiple of WARP_SIZE (32), 2*WARP_SIZE .. NCCL_SIMPLE_MAX_NTHREADS (512)
# (src/graph/tuning.cc getNthreads; outside it NCCL warns and clamps).
NTHREADS_RANGE = (64, 512)
# NCCL_BUFFSIZE: the Simple protocol's buffer per channel and peer; NCCL's default 4 MiB
# (src/init.cc DEFAULT_BUFFSIZE (1 << 22)). The sweep accepts 64 KiB .. 1 GiB.
BUFFSIZE_DEFAULT = 1 << 22
BUFFSIZE_RANGE = (1 << 16, 1 << 30)
# What a key is set to in the baseline when the tuned file already sets it (nccl.conf
# would otherwise make the "default" the last winner; the environment beats nccl.conf):
# the list of every algorithm enables all of them, as unset does (PAT is silently ignored
# by NCCL < 2.23); every protocol (LL128 forced on, which NCCL's default enables on the
# NVLink-connected GPUs linerate targets); -2, NCCL_PARAM's "not set" value for both
# numbers; the intent's GDR level.
NEUTRAL = {"NCCL_ALGO": ",".join(ALGOS_PAT), "NCCL_PROTO": ",".join(PROTOS), "NCCL_BUFFSIZE": "-2",
           "NCCL_NTHREADS": "-2"}
DEFAULT_VALUES = {
    "NCCL_ALGO": ["Ring", "Tree"],
    "NCCL_PROTO": ["Simple", "LL128", "LL"],
    "NCCL_BUFFSIZE": [2097152, 8388608, 16777216],
    "NCCL_NTHREADS": [256, 128],
    "NCCL_NET_GDR_LEVEL": ["PXB", "SYS"],
}
TUNED_VERSION = 1


def algos_of(version):
    """The NCCL_ALGO names a NCCL release accepts (None: version unknown -> the newest list)."""
    parts = [int(x) for x in re.findall(r"\d+", str(version or ""))[:2]]
    if len(parts) == 2 and tuple(parts) < (2, 23):
        return ALGOS
    return ALGOS_PAT


def value_problem(key, value, version=None):
    """Why ``value`` is not a value of ``key`` (None when it is one)."""
    text = str(value)
    if key == "NCCL_ALGO":
        names = algos_of(version) if version else ALGOS_PAT
        bad = [t for t in text.split(",") if t.lower() not in [n.lower() for n in names]]
        return None if text and not bad else f"{', '.join(bad) or repr(text)}: not an algorithm of NCCL " \
            f"{version or ''}".rstrip() + f" (accepted: {', '.join(names)})"
    if key == "NCCL_PROTO":
        bad = [t for t in text.split(",") if t.lower() not in [n.lower() for n in PROTOS]]
        return None if text and not bad else f"{', '.join(bad) or repr(text)}: not a protocol (accepted: " \
            f"{', '.join(PROTOS)})"
    if key == "NCCL_NET_GDR_LEVEL":
        return None if text in GDR_LEVELS else f"not a GDR level (accepted: {', '.join(GDR_LEVELS)})"
    if key in ("NCCL_BUFFSIZE", "NCCL_NTHREADS"):
        if isinstance(value, bool) or not re.fullmatch(r"[0-9]{1,12}", text):
            return "not a positive integer"
        n = int(text)
        if key == "NCCL_BUFFSIZE":
            lo, hi = BUFFSIZE_RANGE
            return None if lo <= n <= hi else f"outside {lo}..{hi} bytes"
        lo, hi = NTHREADS_RANGE
        return None if lo <= n <= hi and n % 32 == 0 else f"not a multiple of 32 in {lo}..{hi}"
    return f"not a key the sweep tunes (allowed: {', '.join(KEYS)})"


# ------------------------------------------------------------------ decision

def median(values):
    return statistics.median(values) if values else None


def judge(baseline, runs, margin_percent, failed=False):
    """One candidate against the baseline: ``{"median", "gain_percent", "spread_percent", "kept", "why"}``.

    ``baseline`` and ``runs``: the metric of each run (GB/s). Kept only when the median gain is at
    least ``margin_percent`` and the candidate's worst run beats the baseline's best run.
    """
    measured = [r for r in runs if r is not None]
    out = {"median": median(measured), "min": min(measured) if measured else None,
           "max": max(measured) if measured else None, "gain_percent": None, "spread_percent": None, "kept": False}
    base = median(baseline)
    if failed:
        out["why"] = "failed"
        return out
    if not runs or not baseline or not base:
        out["why"] = "not measured"
        return out
    gain = (out["median"] / base - 1) * 100
    out["gain_percent"] = round(gain, 2)
    out["spread_percent"] = round((max(runs) - min(runs)) / out["median"] * 100, 2) if out["median"] else None
    if gain < margin_percent:
        out["why"] = f"gain {gain:+.1f} % below the margin {margin_percent:g} %"
    elif min(runs) <= max(baseline):
        out["why"] = (f"gain {gain:+.1f} % but within noise: its worst run {min(runs):g} does not beat the "
                      f"baseline's best {max(baseline):g}")
    else:
        out["kept"] = True
        out["why"] = f"gain {gain:+.1f} % >= {margin_percent:g} %, every run above the baseline's best"
    return out


def choose(judged):
    """The winning value of one key from ``[(value, judged)]`` (in the order listed), or None: the
    highest median of those kept; equal medians keep the first listed."""
    best = None
    for value, j in judged:
        if j.get("kept") and (best is None or j["median"] > best[1]["median"]):
            best = (value, j)
    return best[0] if best else None


# ------------------------------------------------------------------ the sweep

def metric_of(result):
    """The metric of one nccl-tests result (the nccl_tests module's return): the average bus
    bandwidth, else the bus bandwidth at the largest size; None when the run failed or a NCCL WARN
    names a swept key (NCCL refused or clamped the value)."""
    if not result or result.get("error") or not result.get("passed", True):
        return None
    warns = (result.get("parsed") or {}).get("nccl_warnings") or []
    if any(re.search(r"Unrecognized element token|Invalid NCCL_|NCCL_(ALGO|PROTO|BUFFSIZE|NTHREADS)", w)
           for w in warns):
        return None
    value = result.get("avg_busbw")
    return float(value) if value is not None else (float(result["busbw"]) if result.get("busbw") is not None
                                                   else None)


def _gdr_everywhere(result):
    logs = (result or {}).get("logs") or {}
    return bool(logs) and all((log or {}).get("gdr") is True for log in logs.values())


def _version_of(result):
    return ((result or {}).get("parsed") or {}).get("nccl_version")


def _why_failed(result):
    if not result:
        return "not run"
    if result.get("error"):
        return str(result["error"])[:300]
    warns = (result.get("parsed") or {}).get("nccl_warnings") or []
    return "; ".join(warns)[:300] or "no bus bandwidth read"


class Budget:
    """At most ``max_runs`` runs and ``seconds`` of wall time; a run starts only when the time left
    holds one more run as long as the longest so far."""

    def __init__(self, max_runs, seconds, clock=time.monotonic):
        self.max_runs, self.seconds, self.clock = max_runs, seconds, clock
        self.started = clock()
        self.runs, self.longest = 0, 0.0

    def left(self):
        return self.seconds - (self.clock() - self.started)

    def allows(self):
        if self.runs >= self.max_runs:
            return False, f"the run bound ({self.max_runs} runs) was reached"
        if self.runs and self.left() < self.longest:
            return False, f"the time budget ({self.seconds:g} s) would not hold another run"
        return True, None

    def record(self, seconds):
        self.runs += 1
        self.longest = max(self.longest, seconds)


def plan(values, repeats):
    """The configurations the sweep runs: the baseline, then each value of each key;
    ``[{"key", "value"}]`` (the baseline has key None) and the most runs it takes."""
    configs = [{"key": None, "value": None}]
    for item in values:
        configs += [{"key": item["key"], "value": str(v)} for v in item["values"]]
    return configs, len(configs) * repeats


def sweep(run, values, repeats, margin_percent, baseline_env, budget, gdr_baseline=None):
    """Run the sweep. ``run(env) -> result`` runs nccl-tests once with ``env`` on top of the base
    environment; ``values``: ``[{"key", "values"}]`` in sweep order; ``baseline_env``: what the
    baseline sets (the neutral values of keys the tuned file sets now); ``gdr_baseline``: the
    NCCL_NET_GDR_LEVEL NCCL uses without tuning (a candidate equal to it is the baseline).

    Returns ``{"settings", "rows", "baseline", "nccl_version", "runs", "stopped"}``; rows are the
    table (one per configuration: key, value, runs, median, gain, kept, why).
    """
    rows, stopped = [], None
    env = dict(baseline_env)

    def measure(extra):
        nonlocal stopped
        metrics, results = [], []
        for dummy in range(repeats):
            ok, why = budget.allows()
            if not ok:
                stopped = stopped or why
                return metrics, results, True
            t0 = budget.clock()
            result = run({**env, **extra})
            budget.record(budget.clock() - t0)
            results.append(result)
            metrics.append(metric_of(result))
        return metrics, results, False

    metrics, results, cut = measure({})
    version = next((_version_of(r) for r in results if _version_of(r)), None)
    base_row = {"key": "baseline", "value": "NCCL default" if not baseline_env else
                ",".join(f"{k}={v}" for k, v in sorted(baseline_env.items())),
                "runs": list(metrics), "median": None, "gain_percent": 0.0, "kept": None}
    if cut or not metrics or any(m is None for m in metrics):
        first_failed = next((r for r, m in zip(results, metrics) if m is None), None)
        base_row["why"] = ("the baseline failed: " + _why_failed(first_failed)
                           if metrics and any(m is None for m in metrics) else stopped or "not run")
        rows.append(base_row)
        return {"settings": {}, "rows": rows, "nccl_version": version, "runs": budget.runs,
                "stopped": stopped, "failed": base_row["why"]}
    base_row.update(median=median(metrics), min=min(metrics), max=max(metrics), why="the baseline")
    rows.append(base_row)
    baseline = metrics
    gdr = _gdr_everywhere(results[0])
    settings = {}
    for item in values:
        key = item["key"]
        judged = []
        for value in item["values"]:
            value = str(value)
            row = {"key": key, "value": value, "runs": [], "median": None, "gain_percent": None, "kept": False}
            problem = value_problem(key, value, version)
            if problem:
                row["why"] = f"skipped: {problem}"
            elif key == "NCCL_NET_GDR_LEVEL" and not gdr:
                row["why"] = "skipped: GPUDirect RDMA is not in use on every node (NCCL's log), the level changes nothing"
            elif key == "NCCL_NET_GDR_LEVEL" and value == (gdr_baseline or ""):
                row["why"] = "skipped: the level NCCL uses without tuning"
            elif stopped:
                row["why"] = f"not run: {stopped}"
            else:
                m, res, cut = measure({key: value})
                failed = any(x is None for x in m)
                row["runs"] = m
                if cut and not failed:
                    row["why"] = f"not run: {stopped}" if not m else f"cut short: {stopped}"
                    judged.append((value, {"kept": False}))
                    rows.append(row)
                    continue
                j = judge(baseline, m, margin_percent, failed=failed)
                if failed:
                    j["why"] = "failed: " + _why_failed(next(r for r, x in zip(res, m) if x is None))
                row.update({k: j[k] for k in ("median", "min", "max", "gain_percent", "spread_percent", "kept",
                                              "why") if k in j})
                judged.append((value, j))
            rows.append(row)
        winner = choose(judged)
        for row in rows:
            if row.get("key") == key:
                row["winner"] = winner is not None and row["value"] == winner
        if winner is not None:
            settings[key] = winner
            env[key] = winner
            baseline = next(r["runs"] for r in rows if r.get("key") == key and r["value"] == winner)
    return {"settings": settings, "rows": rows, "nccl_version": version, "runs": budget.runs,
            "stopped": stopped, "failed": None}


# ------------------------------------------------------------------ the tuned-settings file

def tuned_document(settings, context):
    """The tuned-settings file (JSON text): the winner and what it was measured on. It holds no
    measurement or time, so a sweep with the same winner writes the same bytes (changed=0)."""
    doc = {"version": TUNED_VERSION, "settings": {k: str(settings[k]) for k in KEYS if k in settings},
           "measured_on": {k: context.get(k) for k in sorted(context)}}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def read_tuned(text):
    """The settings of a tuned-settings file: ``({NCCL_*: str}, [problem])``; empty text: no tuning."""
    if text is None or not str(text).strip():
        return {}, []
    try:
        doc = json.loads(text)
    except ValueError as e:
        return {}, [f"the tuned NCCL settings are not JSON ({e}); remove the file or run the sweep again"]
    if not isinstance(doc, dict) or doc.get("version") != TUNED_VERSION or not isinstance(doc.get("settings"), dict):
        return {}, [f"the tuned NCCL settings are not a version {TUNED_VERSION} document with a settings mapping"]
    settings, problems = {}, []
    for key, value in doc["settings"].items():
        problem = value_problem(key, value)
        if problem:
            problems.append(f"tuned {key}={value}: {problem}")
        else:
            settings[key] = str(value)
    return settings, problems


def baseline_env(current_tuned, gdr_level):
    """The baseline's environment: the neutral value of each key the tuned file sets now."""
    env = {}
    for key in current_tuned or {}:
        if key == "NCCL_NET_GDR_LEVEL":
            if gdr_level:
                env[key] = str(gdr_level)
        elif key in NEUTRAL:
            env[key] = NEUTRAL[key]
    return env


def table_markdown(sweep_result, margin_percent=None, repeats=None):
    """The sweep table as Markdown lines (report summary.md, sweep.md)."""
    lines = ["## NCCL tuning sweep", ""]
    if not sweep_result:
        return []
    settings = sweep_result.get("settings") or {}
    head = (f"Metric: nccl-tests average bus bandwidth (GB/s), median of {repeats} run(s); a value is kept when it "
            f"beats the baseline by {margin_percent:g} % and its worst run beats the baseline's best."
            if margin_percent is not None else "")
    if head:
        lines += [head, ""]
    lines += ["Winner: " + (", ".join(f"`{k}={v}`" for k, v in settings.items()) if settings
                            else "none (NCCL's defaults stay)")
              + (f"; stopped early: {sweep_result['stopped']}" if sweep_result.get("stopped") else ""), ""]
    lines += ["| key | value | runs (GB/s) | median | gain | kept | why |", "|---|---|---|---|---|---|---|"]
    for row in sweep_result.get("rows") or []:
        runs = ", ".join("-" if r is None else f"{r:.2f}" for r in row.get("runs") or [])
        med = "" if row.get("median") is None else f"{row['median']:.2f}"
        gain = "" if row.get("gain_percent") is None else f"{row['gain_percent']:+.1f} %"
        if row.get("key") == "baseline":
            kept = "baseline"
        else:
            kept = "**winner**" if row.get("winner") else "yes" if row.get("kept") else "no"
        why = str(row.get("why") or "").replace("|", "\\|")
        lines.append(f"| {row.get('key')} | {row.get('value')} | {runs} | {med} | {gain} | {kept} | {why} |")
    return lines + [""]
