"""The tuned NCCL file and the tuner config it loads (docs/tuning.md): what intent/nccl_tune.py's sweep
writes, and what role nccl_env and the launchers read back.

NCCL's environment documentation (NVIDIA/nccl docs, env.rst) splits its variables into "System
configuration" and "Debugging"; the Debugging ones "should not be used in production nor retained in
scripts" (``DEBUGGING_VARIABLES``), so no tuned file sets one. A winner is a row of the example tuner
plugin's CSV (NVIDIA/nccl plugins/tuner/example; ext-tuner/example before 2.28), scoped to what was
measured: the collective, the message-size range and the node and rank counts (``row_problem``,
``tuner_config``). The tuned file (``tuned_document``, JSON) holds those rows and what they were
measured on; ``read_tuned`` reads it back (refusing a version 1 file that set a Debugging variable)
and ``job_env`` is the per-job environment that loads them: NCCL_TUNER_PLUGIN (System configuration)
and the plugin's NCCL_TUNER_CONFIG_FILE. /etc/nccl.conf gets nothing from tuning.

Stdlib only.
"""

import json
import re

TUNED_VERSION = 2

# NCCL env.rst, section "Debugging" (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html, read
# 2026-12 from the NCCL 2.30 documentation source; docs/conformance.md): "should not be used in
# production nor retained in scripts". Former names kept where the docs give them (NCCL_MAX_NRINGS,
# NCCL_MIN_NRINGS, NCCL_IB_GDR_LEVEL).
DEBUGGING_VARIABLES = frozenset(
    (
        "NCCL_P2P_DISABLE",
        "NCCL_P2P_LEVEL",
        "NCCL_P2P_DIRECT_DISABLE",
        "NCCL_SHM_DISABLE",
        "NCCL_BUFFSIZE",
        "NCCL_NTHREADS",
        "NCCL_MAX_NCHANNELS",
        "NCCL_MAX_NRINGS",
        "NCCL_MIN_NCHANNELS",
        "NCCL_MIN_NRINGS",
        "NCCL_CHECKS_DISABLE",
        "NCCL_CHECK_POINTERS",
        "NCCL_CHECK_MODE",
        "NCCL_LAUNCH_MODE",
        "NCCL_IB_DISABLE",
        "NCCL_IB_AR_THRESHOLD",
        "NCCL_IB_OOO_RQ",
        "NCCL_IB_QPS_PER_CONNECTION",
        "NCCL_IB_SPLIT_DATA_ON_QPS",
        "NCCL_IB_CUDA_SUPPORT",
        "NCCL_IB_PCI_RELAXED_ORDERING",
        "NCCL_IB_ADAPTIVE_ROUTING",
        "NCCL_IB_ECE_ENABLE",
        "NCCL_MEM_SYNC_DOMAIN",
        "NCCL_CUMEM_ENABLE",
        "NCCL_CUMEM_HOST_ENABLE",
        "NCCL_NET_GDR_LEVEL",
        "NCCL_IB_GDR_LEVEL",
        "NCCL_NET_GDR_C2C",
        "NCCL_NET_GDR_READ",
        "NCCL_GDRCOPY_ENABLE",
        "NCCL_GDRCOPY_FIFO_ENABLE",
        "NCCL_GDRCOPY_SYNC_ENABLE",
        "NCCL_GDRCOPY_FLUSH_ENABLE",
        "NCCL_NET_SHARED_BUFFERS",
        "NCCL_NET_SHARED_COMMS",
        "NCCL_IGNORE_NET_MISMATCH",
        "NCCL_IGNORE_COLLNET_MISMATCH",
        "NCCL_SINGLE_RING_THRESHOLD",
        "NCCL_LL_THRESHOLD",
        "NCCL_TREE_THRESHOLD",
        "NCCL_ALGO",
        "NCCL_PROTO",
        "NCCL_NVB_DISABLE",
        "NCCL_PXN_DISABLE",
        "NCCL_P2P_PXN_LEVEL",
        "NCCL_PXN_C2C",
        "NCCL_RUNTIME_CONNECT",
        "NCCL_GRAPH_REGISTER",
        "NCCL_LOCAL_REGISTER",
        "NCCL_LEGACY_CUDA_REGISTER",
        "NCCL_WIN_ENABLE",
        "NCCL_SET_STACK_SIZE",
        "NCCL_GRAPH_MIXING_SUPPORT",
        "NCCL_GRAPH_STREAM_ORDERING",
        "NCCL_DMABUF_ENABLE",
        "NCCL_P2P_NET_CHUNKSIZE",
        "NCCL_P2P_LL_THRESHOLD",
        "NCCL_ALLOC_P2P_NET_LL_BUFFERS",
        "NCCL_COMM_BLOCKING",
        "NCCL_CGA_CLUSTER_SIZE",
        "NCCL_MAX_CTAS",
        "NCCL_MIN_CTAS",
        "NCCL_NVLS_ENABLE",
        "NCCL_IB_MERGE_NICS",
        "NCCL_NET_MERGE_POLICY",
        "NCCL_MNNVL_ENABLE",
        "NCCL_MNNVL_UUID",
        "NCCL_MNNVL_CLIQUE_ID",
        "NCCL_RAS_ENABLE",
        "NCCL_RAS_ADDR",
        "NCCL_RAS_TIMEOUT_FACTOR",
        "NCCL_LAUNCH_ORDER_IMPLICIT",
        "NCCL_LAUNCH_RACE_FATAL",
        "NCCL_IPC_USE_ABSTRACT_SOCKET",
        "NCCL_SYM_GIN_KERNELS_ENABLE",
    )
)

# the example tuner plugin's names (plugins/tuner/example/plugin.c parseCollType / parseAlgorithm /
# parseProtocol)
TUNER_ALGO = {
    "Tree": "tree",
    "Ring": "ring",
    "CollNetDirect": "collnet_direct",
    "CollNetChain": "collnet_chain",
    "NVLS": "nvls",
    "NVLSTree": "nvls_tree",
    "PAT": "pat",
}
TUNER_PROTO = {"LL": "ll", "LL128": "ll128", "Simple": "simple"}
TUNER_COLLECTIVES = ("broadcast", "reduce", "allgather", "reducescatter", "allreduce")
TUNER_FIELDS = ("collective", "min_bytes", "max_bytes", "algorithm", "protocol", "channels", "nodes", "ranks", "pipe_ops", "reg_buff")
TUNER_PLUGIN = "libnccl-tuner-example.so"
TUNER_CONFIG = "/etc/nccl/tuner.conf"
# the plugin reads sizes as size_t; the example config uses 4294967295 for "every size"
MAX_BYTES = (1 << 64) - 1


def debugging_keys(mapping):
    """The keys of ``mapping`` that are NCCL Debugging-section variables, sorted."""
    return sorted(k for k in (mapping or {}) if str(k) in DEBUGGING_VARIABLES)


def row_problem(row):
    """Why ``row`` is not a row the example tuner plugin reads as meant (None when it is)."""
    if not isinstance(row, dict) or set(row) - set(TUNER_FIELDS) - {"gain_percent"}:
        return f"a mapping of {', '.join(TUNER_FIELDS)}"
    missing = [k for k in TUNER_FIELDS if k not in row]
    if missing:
        return f"missing {', '.join(missing)}"
    if row["collective"] not in TUNER_COLLECTIVES:
        return f"collective {row['collective']!r} (allowed: {', '.join(TUNER_COLLECTIVES)})"
    if row["algorithm"] not in TUNER_ALGO.values():
        return f"algorithm {row['algorithm']!r} (allowed: {', '.join(TUNER_ALGO.values())})"
    if row["protocol"] not in TUNER_PROTO.values():
        return f"protocol {row['protocol']!r} (allowed: {', '.join(TUNER_PROTO.values())})"
    for key in ("min_bytes", "max_bytes", "channels", "nodes", "ranks", "pipe_ops", "reg_buff"):
        if isinstance(row[key], bool) or not isinstance(row[key], int):
            return f"{key} {row[key]!r} is not an integer"
    if not 0 <= row["min_bytes"] <= row["max_bytes"] <= MAX_BYTES:
        return f"size range {row['min_bytes']}..{row['max_bytes']} (0 <= min <= max)"
    if row["nodes"] < 1 or row["ranks"] < 1:
        return "a tuned row is scoped to the node and rank counts it was measured on (>= 1, not -1)"
    return None


def tuner_config(rows):
    """The example tuner plugin's CSV config for ``rows`` (comments say what wrote it)."""
    lines = [
        "# NCCL example tuner plugin config (NVIDIA/nccl plugins/tuner/example), written by linerate",
        "# from a measured sweep (docs/tuning.md); NCCL_TUNER_CONFIG_FILE points here.",
        "# " + ",".join(("collective_type", "min_bytes", "max_bytes", "algorithm", "protocol", "channels", "nNodes", "nRanks", "numPipeOps", "regBuff")),
    ]
    for r in rows:
        lines.append(",".join(str(r[k]) for k in TUNER_FIELDS))
    return "\n".join(lines) + "\n"


def tuned_document(rows, context, plugin=TUNER_PLUGIN):
    """The tuned file (JSON text): the scoped rows and what they were measured on. No measurement or
    time, so a sweep with the same result writes the same bytes (changed=0)."""
    order = sorted(rows, key=lambda r: (r["collective"], r["nodes"], r["min_bytes"]))
    clean = [{k: r[k] for k in TUNER_FIELDS} for r in order]
    doc = {"version": TUNED_VERSION, "tuner": {"plugin": plugin, "rows": clean}, "measured_on": {k: context.get(k) for k in sorted(context)}}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def read_tuned(text):
    """A tuned file's text -> ``{"rows": [row], "plugin": str|None, "problems": [msg]}``; empty text
    (no file): no rows, no problem (the caller decides whether a missing file is a finding)."""
    out = {"rows": [], "plugin": None, "problems": []}
    if text is None or not str(text).strip():
        return out
    try:
        doc = json.loads(text)
    except ValueError as e:
        out["problems"].append(f"the tuned NCCL file is not JSON ({e}); roll back or run the sweep again")
        return out
    if not isinstance(doc, dict):
        out["problems"].append("the tuned NCCL file is not a JSON object")
        return out
    debug = debugging_keys(doc.get("settings") if isinstance(doc.get("settings"), dict) else {})
    if debug:
        out["problems"].append(
            f"the tuned NCCL file sets {', '.join(debug)}: variables of NCCL's Debugging section, which linerate "
            "never writes to /etc/nccl.conf (a version 1 file); roll back or run the sweep again (docs/tuning.md)"
        )
        return out
    if doc.get("version") == 1 and not doc.get("settings"):
        return out  # a version 1 file that kept NCCL's defaults: nothing to apply
    tuner = doc.get("tuner")
    if doc.get("version") != TUNED_VERSION or not isinstance(tuner, dict) or not isinstance(tuner.get("rows"), list):
        out["problems"].append(f"the tuned NCCL file is not a version {TUNED_VERSION} document with tuner rows")
        return out
    plugin = tuner.get("plugin")
    if not isinstance(plugin, str) or not re.fullmatch(r"[A-Za-z0-9._/+-]{1,255}", plugin):
        out["problems"].append(f"tuner plugin {plugin!r}: a library name or path is needed")
        return out
    for i, row in enumerate(tuner["rows"]):
        problem = row_problem(row)
        if problem:
            out["problems"].append(f"tuner row {i + 1}: {problem}")
    if not out["problems"]:
        out["rows"] = [dict(r) for r in tuner["rows"]]
        out["plugin"] = plugin
    return out


def job_env(tuned, config_file=TUNER_CONFIG):
    """The per-job environment for the tuned rows: NCCL_TUNER_PLUGIN (System configuration) and the
    plugin's NCCL_TUNER_CONFIG_FILE; empty when there are no rows (NCCL's defaults)."""
    if not (tuned or {}).get("rows"):
        return {}
    return {"NCCL_TUNER_PLUGIN": tuned["plugin"], "NCCL_TUNER_CONFIG_FILE": config_file}
