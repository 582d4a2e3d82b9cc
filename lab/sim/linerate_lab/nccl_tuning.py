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
(algorithm, protocol) with the least time in its own cost model, and on a healthy lab fabric the
time the lab then takes is exactly that model's: NCCL's defaults are the best choice at every
size, so a sweep finds no winner (only run-to-run noise, at most 1 %). Otherwise:

- LL: half the bandwidth (flag per 8 bytes), lowest latency: fastest at small sizes, capped at large;
- LL128: 0.95 of Simple's bandwidth, latency between LL and Simple: near Simple at large sizes;
- Simple: full bandwidth, the highest latency;
- Tree: 2*log2(nodes) network steps instead of Ring's 2*(nodes-1): better at latency-bound
  sizes with many nodes; all_reduce only (all_gather and reduce_scatter run Ring: NCCL < 2.23 has
  no other algorithm for them across nodes without NVLS/CollNet);
- alltoall_perf is point-to-point (ncclSend/ncclRecv): NCCL_ALGO, NCCL_PROTO and the tuner plugin
  do not choose for it;
- NCCL_BUFFSIZE: a Simple chunk is buffsize/8 (NCCL_STEPS); each chunk costs a fixed network
  overhead, so bandwidth is chunk/(chunk + 16 KiB) relative to the default's: 4 MiB -> 1.0,
  1 MiB -> 0.92, 256 KiB -> 0.69, 16 MiB -> 1.02;
- NCCL_NTHREADS: fewer threads copy less per channel: (threads/512)^0.3 of Simple's bandwidth.

The quirk (fault ``nccl-proto-quirk``, the model's ``nccl_quirk``): the fabric serves one protocol
worse than NCCL's cost model expects over one size range - its bandwidth there is ``factor`` times
the model's (``QUIRK``: Simple at 0.8 over 64 MiB..256 MiB, as large Simple chunks that overrun a
switch buffer would). NCCL still picks by its model (Simple from 64 MiB on), so another protocol
(LL128, 0.95 of Simple's model bandwidth) is faster there and only there: forcing it, or a
tuner-plugin row for that range, gains about 18 %; everywhere else NCCL's pick stays the best.

The tuner plugin (NVIDIA/nccl plugins/tuner/example, ``ext-tuner/example`` before 2.28): with
``NCCL_TUNER_PLUGIN`` naming it (``example``, ``libnccl-tuner-example.so`` or a path to that
file), each rank reads the CSV ``NCCL_TUNER_CONFIG_FILE`` (default ``nccl_tuner.conf`` in the
working directory): ``collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks
[,numPipeOps[,regBuff]]``; a row matching the collective, the size (inclusive bounds), the node
and rank counts (-1: any) sets that (algorithm, protocol)'s cost to 0, so NCCL picks it when it is
enabled. The lab's NCCL stands in for the library and the plugin built from the same tree; any
other plugin name is not found and NCCL keeps its internal tuner.

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
TREE_BW = 0.98  # Tree's bandwidth between nodes, relative to Ring's (NCCL's model and the lab's)
# the collectives of nccl-tests the lab runs: (the tuner plugin's collective name, algorithms that run it)
COLLECTIVES = {
    "all_reduce_perf": ("allreduce", ("Tree", "Ring")),
    "all_gather_perf": ("allgather", ("Ring",)),
    "reduce_scatter_perf": ("reducescatter", ("Ring",)),
    "alltoall_perf": (None, ()),
}
# the example tuner plugin's names (plugins/tuner/example/plugin.c parseAlgorithm / parseProtocol)
TUNER_ALGOS = {
    "tree": "Tree",
    "ring": "Ring",
    "collnet_direct": "CollNetDirect",
    "collnet_chain": "CollNetChain",
    "nvls": "NVLS",
    "nvls_tree": "NVLSTree",
    "pat": "PAT",
}
TUNER_PROTOS = {"ll": "LL", "ll128": "LL128", "simple": "Simple"}
TUNER_LIBRARY = "libnccl-tuner-example.so"
# the fault nccl-proto-quirk's quirk (see above)
QUIRK = {"protocol": "Simple", "min_bytes": 64 << 20, "max_bytes": 256 << 20, "factor": 0.8}


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
    if not algos:  # no CollNet: a list that enabled only CollNet/NVLS (or nothing known) gets Ring and Tree
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


def _quirk_factor(quirk, proto, size):
    if quirk and proto == quirk.get("protocol") and int(quirk["min_bytes"]) <= size <= int(quirk["max_bytes"]):
        return float(quirk.get("factor", 1.0))
    return 1.0


def _bandwidth(peak, algo, proto, tuning):
    bw = peak * PROTO_BW[proto] * (TREE_BW if algo == "Tree" else 1.0)
    if proto == "Simple":
        bw *= _chunk_eff(tuning["buffsize"]) / _chunk_eff(BUFFSIZE_DEFAULT)
        bw *= (tuning["nthreads"] / NTHREADS_MAX) ** 0.3
    return bw


def bus_factor(test, nranks):
    """nccl-tests' bus bandwidth factor: 2(n-1)/n for all_reduce, (n-1)/n for the others."""
    return (2 if test == "all_reduce_perf" else 1) * (nranks - 1) / nranks


def _time_us(size, nranks, nodes, peak, algo, proto, tuning, test="all_reduce_perf", quirk=None):
    if algo == "Tree":
        steps = 2 * max(1, math.ceil(math.log2(nodes)))
    else:
        steps = (2 if test == "all_reduce_perf" else 1) * max(1, nodes - 1)
    lat = BASE_LAT + steps * PROTO_LAT[proto]
    bus_bytes = size * bus_factor(test, nranks)
    bw = _bandwidth(peak, algo, proto, tuning) * _quirk_factor(quirk, proto, size)
    return lat + bus_bytes / (bw * 1e3)


def tuner_match(rows, test, size, nodes, nranks):
    """The (algorithm, protocol) of the first example-plugin row that matches, or None."""
    coll = COLLECTIVES.get(test, (None, ()))[0]
    for row in rows or []:
        if row["collective"] == coll and row["min_bytes"] <= size <= row["max_bytes"] and row["nodes"] in (-1, nodes) and row["ranks"] in (-1, nranks):
            return row["algorithm"], row["protocol"]
    return None


def choose(size, nranks, nodes, peak, tuning, test="all_reduce_perf"):
    """NCCL's pick for one size: a tuner-plugin row's (algorithm, protocol) when one matches and
    NCCL_ALGO/NCCL_PROTO leave it enabled, else the enabled pair of least time in NCCL's own model."""
    runs = COLLECTIVES.get(test, ("", ("Ring",)))[1]
    algos = [a for a in sorted(tuning["algos"]) if a in runs and not (nodes < 2 and a == "Tree")]
    hit = tuner_match(tuning.get("tuner_rows"), test, size, nodes, nranks)
    if hit and hit[0] in algos and hit[1] in tuning["protos"]:
        return hit
    best = None
    for algo in algos:
        for proto in sorted(tuning["protos"]):
            t = _time_us(size, nranks, nodes, peak, algo, proto, tuning, test)
            if best is None or t < best[0]:
                best = (t, algo, proto)
    if best is None:
        return "Ring", sorted(tuning["protos"])[0]
    return best[1], best[2]


def busbw(size, nranks, nodes, peak, tuning, test="all_reduce_perf", quirk=None):
    """The lab's bus bandwidth (GB/s) of ``test`` at ``size`` bytes with NCCL's pick, and the pick;
    ``peak``: what the network gives a ring (the fabric model's verdict); ``quirk``: the fabric's
    ``nccl_quirk`` (None on a healthy fabric). alltoall_perf: NCCL_ALGO/NCCL_PROTO do not apply."""
    if not COLLECTIVES.get(test, ("", ("Ring",)))[1]:
        lat = BASE_LAT + max(1, nodes - 1) * PROTO_LAT["Simple"]
        bus_bytes = size * bus_factor(test, nranks)
        t = lat + bus_bytes / (peak * 1e3)
        return bus_bytes / (t * 1e3), None, None
    algo, proto = choose(size, nranks, nodes, peak, tuning, test)
    t = _time_us(size, nranks, nodes, peak, algo, proto, tuning, test, quirk)
    return size * bus_factor(test, nranks) / (t * 1e3), algo, proto


# ------------------------------------------------------------ the example tuner plugin


def _plugin_found(name):
    """NCCL_TUNER_PLUGIN resolved as NCCL does (the name, then libnccl-tuner-<name>.so): True for the
    example plugin (the one the lab's NCCL carries)."""
    base = str(name or "").rsplit("/", 1)[-1]
    return base == TUNER_LIBRARY or f"libnccl-tuner-{base}.so" == TUNER_LIBRARY


def parse_tuner_config(text):
    """The example plugin's loadConfig: ``([row], [loaded message])``; a line with fewer than 8 or more
    than 10 fields is skipped, as the plugin skips it."""
    rows, msgs = [], []
    for line in (text or "").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        tokens = [t.strip(" \t") for t in line.split(",") if t != ""]
        if not 8 <= len(tokens) <= 10:
            continue
        try:
            row = {
                "collective": tokens[0],
                "min_bytes": int(tokens[1]),
                "max_bytes": int(tokens[2]),
                "algorithm": TUNER_ALGOS.get(tokens[3]),
                "protocol": TUNER_PROTOS.get(tokens[4]),
                "channels": int(tokens[5]),
                "nodes": int(tokens[6]),
                "ranks": int(tokens[7]),
                "pipe_ops": int(tokens[8]) if len(tokens) > 8 else -1,
                "reg_buff": int(tokens[9]) if len(tokens) > 9 else -1,
            }
        except ValueError:
            continue
        rows.append(row)
        msgs.append(
            f"TUNER/ExamplePlugin: Loaded config: {tokens[0]} [{row['min_bytes']}-{row['max_bytes']}] "
            f"{tokens[3]}/{tokens[4]} channels={row['channels']} nodes={row['nodes']} "
            f"ranks={row['ranks']} pipeOps=any regBuff=any"
        )
    return rows, msgs


def load_tuner(conf, read=None):
    """The tuner plugin as NCCL loads it from ``conf`` (nccl.conf + environment): ``{"rows": [...] or
    None, "infos": [msg]}``; ``read(path) -> text or None`` reads the config file (a missing file: the
    plugin's "not found, using defaults")."""
    name = conf.get("NCCL_TUNER_PLUGIN")
    out = {"rows": None, "infos": []}
    if name is None:
        return out
    out["infos"].append(f"NCCL_TUNER_PLUGIN set by environment to {name}")
    if name.lower() == "none":
        return out
    if not _plugin_found(name):
        out["infos"].append(f"TUNER/Plugin: Could not find: {name}. Using internal tuner plugin.")
        return out
    out["infos"].append(f"Successfully loaded external tuner plugin {TUNER_LIBRARY}")
    path = conf.get("NCCL_TUNER_CONFIG_FILE") or "nccl_tuner.conf"
    text = read(path) if read else None
    if text is None:
        out["infos"].append(f"TUNER/ExamplePlugin: Config file {path} not found, using defaults")
        out["rows"] = []
        return out
    rows, msgs = parse_tuner_config(text)
    out["infos"] += msgs + [f"TUNER/ExamplePlugin: Loaded {len(rows)} tuning configurations from {path}"]
    out["rows"] = rows
    return out
