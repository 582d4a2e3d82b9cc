"""The lab's model of NCCL's tuning knobs (NCCL_ALGO, NCCL_PROTO, NCCL_BUFFSIZE, NCCL_NTHREADS)
for the simulated nccl-tests (docs/lab.md, "NCCL's tuning knobs").

Reading the variables follows NVIDIA/nccl (tags v2.21.5-1 and v2.24.3-1):

- ``NCCL_ALGO`` / ``NCCL_PROTO`` (src/graph/tuning.cc ``parseList``): comma-separated names,
  case-insensitive, a leading ``^`` excludes. Up to 2.23 a name NCCL does not know is ignored
  without a word (a list of unknown names only enables nothing, and NCCL falls back: with no
  CollNet, Ring and Tree come back on for NCCL_ALGO; with no protocol, Ring with every protocol).
  From 2.24 an unknown name is ``WARN Unrecognized element token "<x>" when parsing "<list>"`` and
  ``ncclInvalidUsage``: the communicator is not created.
- ``NCCL_NTHREADS`` (``getNthreads``): -2 (unset) is the default; not a multiple of 32 warns
  ``Invalid NCCL_NTHREADS <n> (must be a multiple of 32)`` and uses 512; above 512 ``(maximum 512)``
  and 512; below 64 ``(minimum 64)`` and 64.
- ``NCCL_BUFFSIZE`` (src/init.cc ``computeBuffSizes``): the Simple protocol's buffer, default
  4 MiB (-2: the default).

The physics (the lab's, stated here, not measured): per message size NCCL picks the enabled
(algorithm, protocol) with the least time in its own cost model; the time the lab then takes is
the lab's "real" cost, which differs from NCCL's model in one place on purpose: Tree's bandwidth
between the lab's nodes is 0.60 of Ring's, where NCCL's model expects 0.98 (its own
treeCorrectionFactor shows the model is not exact at medium sizes). So at medium sizes NCCL
picks Tree and Ring is faster: ``NCCL_ALGO=Ring`` beats the default by a margin in the sweep's
range, which is what exercises the write-back path. Otherwise:

- LL: half the bandwidth (flag per 8 bytes), lowest latency: fastest at small sizes, capped at large;
- LL128: 0.95 of Simple's bandwidth, latency between LL and Simple: near Simple at large sizes;
- Simple: full bandwidth, the highest latency;
- Tree: 2*log2(nodes) network steps instead of Ring's 2*(nodes-1): better at latency-bound
  sizes with many nodes;
- NCCL_BUFFSIZE: a Simple chunk is buffsize/8 (NCCL_STEPS); each chunk costs a fixed network
  overhead, so bandwidth is chunk/(chunk + 16 KiB) relative to the default's: 4 MiB -> 1.0,
  1 MiB -> 0.92, 256 KiB -> 0.69, 16 MiB -> 1.02;
- NCCL_NTHREADS: fewer threads copy less per channel: (threads/512)^0.3 of Simple's bandwidth.

NVLS/NVLSTree and CollNet need NVLink SHARP / a CollNet plugin the lab's nodes lack: NCCL
disables them (they never run).
"""
import math

ALGOS_221 = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree")
ALGOS_223 = ALGOS_221 + ("PAT",)
PROTOS = ("LL", "LL128", "Simple")
UNAVAILABLE = ("CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
BUFFSIZE_DEFAULT = 1 << 22
NSTEPS = 8
CHUNK_OVERHEAD = 16 << 10
NTHREADS_MAX, NTHREADS_MIN = 512, 64
# protocol: (bandwidth share, latency per network step in us: NCCL's hwLat NET for Ring)
PROTO_BW = {"LL": 0.5, "LL128": 0.95, "Simple": 1.0}
PROTO_LAT = {"LL": 2.7, "LL128": 4.0, "Simple": 14.0}
BASE_LAT = 6.6
TREE_BW_MODEL = 0.98     # what NCCL's cost model expects of Tree between nodes
TREE_BW_LAB = 0.60       # what the lab's fabric gives Tree (the model's error, on purpose)


def _version(version):
    parts = [int(x) for x in str(version).split("+")[0].split(".")[:2]]
    return tuple(parts + [0] * (2 - len(parts)))


def parse_list(text, names, version):
    """NCCL's parseList: ``(enabled names, warning or None, error or None)``."""
    exclude = text.startswith("^")
    body = text[1:] if exclude else text
    tokens = [t for t in body.split(",") if t]
    enabled = set(names) if exclude else set()
    lowered = {n.lower(): n for n in names}
    for token in tokens:
        name = lowered.get(token.lower())
        if name is None:
            if _version(version) >= (2, 24):
                msg = f'Unrecognized element token "{token}" when parsing "{text}"'
                return set(names), msg, "invalid usage"
            continue  # NCCL <= 2.23: ignored, no message
        if exclude:
            enabled.discard(name)
        else:
            enabled.add(name)
    return enabled, None, None


def _int_param(conf, key):
    """ncclLoadParam: strtoll of the value; -2 when unset or empty."""
    text = conf.get(key)
    if text in (None, ""):
        return -2
    try:
        return int(str(text).strip(), 0)
    except ValueError:
        return -2


def read(conf, version):
    """What NCCL makes of the tuning variables: ``{"algos", "protos", "buffsize", "nthreads",
    "warnings": [(where, msg)], "infos": [msg], "error": None|str}``."""
    out = {"warnings": [], "infos": [], "error": None}
    algo_names = ALGOS_223 if _version(version) >= (2, 23) else ALGOS_221
    protos, algos = set(PROTOS), set(algo_names)
    if conf.get("NCCL_PROTO") is not None:
        out["infos"].append(f"NCCL_PROTO set by environment to {conf['NCCL_PROTO']}")
        protos, warn, err = parse_list(conf["NCCL_PROTO"], PROTOS, version)
        if warn:
            out["warnings"].append(("graph/tuning.cc:95", warn))
            out["error"] = err
    if conf.get("NCCL_ALGO") is not None and not out["error"]:
        out["infos"].append(f"NCCL_ALGO set by environment to {conf['NCCL_ALGO']}")
        algos, warn, err = parse_list(conf["NCCL_ALGO"], algo_names, version)
        if warn:
            out["warnings"].append(("graph/tuning.cc:95", warn))
            out["error"] = err
    algos = {a for a in algos if a not in UNAVAILABLE}
    if not algos:   # no CollNet: a list that enabled only CollNet/NVLS (or nothing known) gets Ring and Tree
        algos = {"Ring", "Tree"}
    if not protos:  # nothing available: "at least set ring algo available", every protocol
        algos, protos = {"Ring"}, set(PROTOS)
    out["algos"], out["protos"] = algos, protos
    nt = _int_param(conf, "NCCL_NTHREADS")
    if nt > 0:
        if nt % 32:
            out["warnings"].append(("graph/tuning.cc:20", f"Invalid NCCL_NTHREADS {nt} (must be a multiple of 32)"))
            nt = NTHREADS_MAX
        elif nt > NTHREADS_MAX:
            out["warnings"].append(("graph/tuning.cc:23", f"Invalid NCCL_NTHREADS {nt} (maximum {NTHREADS_MAX})."))
            nt = NTHREADS_MAX
        elif nt < NTHREADS_MIN:
            out["warnings"].append(("graph/tuning.cc:26", f"Invalid NCCL_NTHREADS {nt} (minimum {NTHREADS_MIN})."))
            nt = NTHREADS_MIN
        else:
            out["infos"].append(f"NCCL_NTHREADS set by environment to {nt}.")
    else:
        nt = NTHREADS_MAX
    out["nthreads"] = nt
    bs = _int_param(conf, "NCCL_BUFFSIZE")
    if bs != -2:
        out["infos"].append(f"NCCL_BUFFSIZE set by environment to {bs}.")
    out["buffsize"] = bs if bs > 0 else BUFFSIZE_DEFAULT
    return out


def _chunk_eff(buffsize):
    chunk = buffsize / NSTEPS
    return chunk / (chunk + CHUNK_OVERHEAD)


def _bandwidth(peak, algo, proto, tuning, tree_share):
    bw = peak * PROTO_BW[proto] * (tree_share if algo == "Tree" else 1.0)
    if proto == "Simple":
        bw *= _chunk_eff(tuning["buffsize"]) / _chunk_eff(BUFFSIZE_DEFAULT)
        bw *= (tuning["nthreads"] / NTHREADS_MAX) ** 0.3
    return bw


def _time_us(size, nranks, nodes, peak, algo, proto, tuning, tree_share):
    steps = 2 * max(1, math.ceil(math.log2(nodes))) if algo == "Tree" else 2 * max(1, nodes - 1)
    lat = BASE_LAT + steps * PROTO_LAT[proto]
    bus_bytes = size * 2 * (nranks - 1) / nranks
    return lat + bus_bytes / (_bandwidth(peak, algo, proto, tuning, tree_share) * 1e3)


def choose(size, nranks, nodes, peak, tuning):
    """NCCL's pick for one size: the enabled (algo, proto) of least time in NCCL's own model."""
    best = None
    for algo in sorted(tuning["algos"]):
        if nodes < 2 and algo == "Tree":
            continue
        for proto in sorted(tuning["protos"]):
            t = _time_us(size, nranks, nodes, peak, algo, proto, tuning, TREE_BW_MODEL)
            if best is None or t < best[0]:
                best = (t, algo, proto)
    if best is None:
        return "Ring", sorted(tuning["protos"])[0]
    return best[1], best[2]


def busbw(size, nranks, nodes, peak, tuning):
    """The lab's bus bandwidth (GB/s) of an all-reduce of ``size`` bytes with NCCL's pick;
    ``peak``: what the network gives a ring (the fabric model's verdict)."""
    algo, proto = choose(size, nranks, nodes, peak, tuning)
    t = _time_us(size, nranks, nodes, peak, algo, proto, tuning, TREE_BW_LAB)
    return size * 2 * (nranks - 1) / nranks / (t * 1e3), algo, proto
