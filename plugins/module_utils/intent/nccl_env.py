"""The NCCL environment of one host, from its RDMA facts, its cabling and the intent
(filters ``nccl_env_settings``, ``nccl_shell_quote``, ``nccl_tuned_settings``: plugins/filter/nccl_env.py).

``nccl_env_settings(rdma, cabled, options)`` returns
``{"settings": {NCCL_*: str} (ordered), "job": {NCCL_*: str}, "hcas": [{device, port, netdev}],
"excluded": [msg], "problems": [msg]}``; the role fails on ``problems`` and
warns about ``excluded``. It never lists an HCA whose port is not ACTIVE.

``settings`` is what /etc/nccl.conf (and the launcher environment file, the profile script) hold:
System-configuration variables of NCCL's env.rst only, never one of its Debugging section
(``nccl_tuned.DEBUGGING_VARIABLES``: "should not be used in production nor retained in scripts").
``job`` is the per-job environment (the per-job file /etc/nccl/tuned-job.env, which the launchers and
the Kubernetes rendering read; a job opts in): an explicit GDR level (``gdr_level`` LOC..SYS:
NCCL_NET_GDR_LEVEL, a Debugging variable) goes there; ``auto`` (or empty) writes nothing and leaves
NCCL's own rule (GDR when the GPU-NIC path is PXB or closer) in charge. An override naming a Debugging
variable is a problem, never written (validation refuses it before any contact: schema.py, varcheck.py).

Precedence, lowest first: the values derived from the facts and the intent, the
intent's ``fabric.nccl.overrides``, the role's ``overrides``. The NCCL tuning
sweep's result never enters this derivation (docs/tuning.md): what it measured
is scoped tuner-plugin rows (``nccl_tuned_settings``: the tuner config and the
per-job environment that loads it), and ``options["tuned"]`` refuses every
variable of NCCL's Debugging section.
"""

import re

from ansible_collections.linerate.fabric.plugins.module_utils.intent import nccl_tuned

ORDER = ("NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_IB_TC", "NCCL_SOCKET_IFNAME", "NCCL_NET")
# fabric.nccl.gdr_level / nccl_env_gdr_level: "auto" (NCCL's rule decides from the topology, nothing is
# written) or the level a job sets with NCCL_NET_GDR_LEVEL in its per-job environment
GDR_AUTO = "auto"


def debugging_allowed(key):
    """What is allowed instead of ``key``, a variable of NCCL's Debugging section (the validators' text)."""
    return (
        f"a System-configuration NCCL_* variable of NCCL's env.rst; {key} is in its Debugging section, "
        "never written to /etc/nccl.conf: set it per job, in the job's own environment (the launcher's "
        "-x / env:), and the GDR level with fabric.nccl.gdr_level, which goes to the per-job file "
        "/etc/nccl/tuned-job.env"
    )


def debugging_override_problem(where, key, value):
    """The message for an override that names a variable of NCCL's Debugging section (None: not one)."""
    if str(key) not in nccl_tuned.DEBUGGING_VARIABLES:
        return None
    return f"{where}.{key}: {value!r} is not allowed (allowed: {debugging_allowed(key)})"


def _row(rdma, device, port):
    for row in (rdma or {}).get("ports", []):
        if row.get("device") == device and int(row.get("port") or 1) == int(port):
            return row
    return None


def _gids(rdma, device, port):
    dev = ((rdma or {}).get("devices") or {}).get(device) or {}
    ports = dev.get("ports") or {}
    p = ports.get(port) or ports.get(str(port)) or {}
    return p.get("gids") or []


def nccl_env_settings(rdma, cabled, options):
    transport = options.get("transport", "roce")
    hcas, gid_indexes, problems, excluded = _cabled_hcas(rdma, cabled, transport, options.get("down_ports", "fail"))
    if not hcas and not problems:
        problems.append("no cabled RDMA port is up: nothing for NCCL_IB_HCA")

    settings = {}
    if hcas:
        # '=' makes NCCL match names exactly (mlx5_1 must not also select mlx5_10)
        settings["NCCL_IB_HCA"] = "=" + ",".join(f"{h['device']}:{h['port']}" for h in hcas)
    if transport == "roce" and hcas:
        _roce_settings(rdma, options, gid_indexes, settings, problems)
    if options.get("socket_ifname"):
        settings["NCCL_SOCKET_IFNAME"] = str(options["socket_ifname"])
    job = {}
    if options.get("gdr_level") not in (None, "", GDR_AUTO):
        job["NCCL_NET_GDR_LEVEL"] = str(options["gdr_level"])
    if options.get("net"):
        settings["NCCL_NET"] = str(options["net"])
    problems += _tuned_problems(options.get("tuned"))
    _apply_overrides(options, settings, problems)
    ordered = {k: settings[k] for k in ORDER if k in settings}
    ordered.update({k: v for k, v in settings.items() if k not in ordered})
    return {"settings": ordered, "job": job, "hcas": hcas, "excluded": excluded, "problems": problems}


def _cabled_hcas(rdma, cabled, transport, down_policy):
    """(hcas, {device:port: RoCE v2 IPv4 GID index}, problems, excluded) of the cabled ports: a port
    rdma_facts lacks, on another netdev, or not up (excluded or a problem, by ``down_policy``) is no HCA."""
    problems, excluded, hcas, gid_indexes = [], [], [], {}
    for entry in cabled or []:
        device = entry.get("device")
        port = int(entry.get("port", 1))
        row = _row(rdma, device, port)
        if row is None:
            problems.append(f"{device} port {port}: cabled (rdma_ports) but not found by rdma_facts")
            continue
        if entry.get("netdev") and row.get("netdev") and entry["netdev"] != row["netdev"]:
            problems.append(f"{device} port {port}: rdma_ports says netdev {entry['netdev']}, the host has {row['netdev']}")
            continue
        if not row.get("up"):
            msg = f"{device} port {port} ({row.get('netdev')}) is cabled but not up: state {row.get('state')}, physical state {row.get('physical_state')}"
            if transport == "infiniband" and "INIT" in str(row.get("state")) and row.get("physical_state") == "LinkUp":
                msg += " (an InfiniBand port stays INIT until a subnet manager configures it: is one running?)"
            if down_policy == "exclude":
                excluded.append(msg + "; left out of NCCL_IB_HCA")
            else:
                problems.append(msg + " - NCCL must not use it (fix the link, or set nccl_env_down_ports: exclude to run without this rail)")
            continue
        hcas.append({"device": device, "port": port, "netdev": row.get("netdev")})
        if transport == "roce":
            gid_indexes[f"{device}:{port}"] = row.get("roce_v2_ipv4_gid_index")
    return hcas, gid_indexes, problems, excluded


def _roce_settings(rdma, options, gid_indexes, settings, problems):
    """NCCL_IB_GID_INDEX (forced, checked to be a RoCE v2 GID on every port, or the one index all ports
    share) and NCCL_IB_TC."""
    forced = options.get("gid_index")
    if forced not in (None, ""):
        forced = int(forced)
        for key in gid_indexes:
            dev, port = key.split(":")
            row = next((g for g in _gids(rdma, dev, int(port)) if g.get("index") == forced), None)
            if row is None or row.get("version") != "v2":
                problems.append(f"{key}: GID index {forced} is not a RoCE v2 GID on this port")
        settings["NCCL_IB_GID_INDEX"] = str(forced)
    else:
        missing = [k for k, v in gid_indexes.items() if v is None]
        if missing:
            problems.append(f"{', '.join(missing)}: no RoCE v2 IPv4 GID (does the netdev have its IPv4 rail address?)")
        values = sorted({v for v in gid_indexes.values() if v is not None})
        if len(values) > 1:
            problems.append(
                "the RoCE v2 IPv4 GID index differs between ports ("
                + ", ".join(f"{k}: {v}" for k, v in sorted(gid_indexes.items()))
                + "); NCCL_IB_GID_INDEX is one value for all - set nccl_env_gid_index"
            )
        elif values:
            settings["NCCL_IB_GID_INDEX"] = str(values[0])
    if options.get("ib_tc") not in (None, ""):
        settings["NCCL_IB_TC"] = str(int(options["ib_tc"]))


def _tuned_problems(tuned):
    """Tuning writes no /etc/nccl.conf variable: every ``tuned`` entry is a problem (docs/tuning.md)."""
    problems = [
        f"tuned {key}: a variable of NCCL's Debugging section is never written to /etc/nccl.conf "
        "by tuning (docs/tuning.md); the tuned file's rows go to the tuner plugin's config"
        for key in nccl_tuned.debugging_keys(tuned)
    ]
    for key, value in (tuned or {}).items():
        if str(key) not in nccl_tuned.DEBUGGING_VARIABLES:
            problems.append(f"tuned {key}={value}: tuning writes no /etc/nccl.conf variable (docs/tuning.md)")
    return problems


def _apply_overrides(options, settings, problems):
    """The intent's then the role's overrides over ``settings``: NCCL_* names only, no Debugging variable."""
    for where, overrides in (("fabric.nccl.overrides", options.get("intent_overrides") or {}), ("nccl_env_overrides", options.get("overrides") or {})):
        for key, value in overrides.items():
            if not re.fullmatch(r"NCCL_[A-Z0-9_]+", str(key)):
                problems.append(f"override {key}: only NCCL_* names are allowed")
                continue
            debugging = debugging_override_problem(where, key, value)
            if debugging:
                problems.append(debugging)
                continue
            settings[str(key)] = str(value)


def shell_quote(value):
    """Single-quote a value for a POSIX shell (also valid in systemd EnvironmentFile)."""
    return "'" + str(value).replace("'", "'\"'\"'") + "'"


def nccl_tuned_settings(text, config_file=nccl_tuned.TUNER_CONFIG, state=None):
    """The tuned file's text (empty: none) -> ``{"settings": {} (nothing for /etc/nccl.conf, ever),
    "rows": [tuner row], "tuner_config": CSV text ("" without rows), "job": {NCCL_TUNER_PLUGIN,
    NCCL_TUNER_CONFIG_FILE} ({} without rows), "problems": [msg], "missing": msg|None}``.

    ``state``: what the controller found at the file's path, ``{"path", "exists", "readable",
    "required"}`` (a stat); when ``required`` (tuning is in use: the inventory says so, or a history
    of sweeps is there) a missing or unreadable file is ``missing`` (finding NCCL_TUNED_MISSING),
    never silently no tuning."""
    tuned = nccl_tuned.read_tuned(text)
    out = {
        "settings": {},
        "rows": tuned["rows"],
        "problems": list(tuned["problems"]),
        "missing": None,
        "tuner_config": nccl_tuned.tuner_config(tuned["rows"]) if tuned["rows"] else "",
        "job": nccl_tuned.job_env(tuned, config_file),
    }
    st = state or {}
    if st.get("required") and (not st.get("exists") or not st.get("readable", True)):
        out["missing"] = (
            f"{st.get('path') or 'the tuned NCCL file'}: "
            + ("absent" if not st.get("exists") else "not readable")
            + " while NCCL tuning is in use (linerate_nccl_tuning, or a history of sweeps beside it); "
            "restore it (playbooks/nccl_tune.yml -e verify_fabric_nccl_tune_rollback=true) or run the "
            "sweep again"
        )
    return out
