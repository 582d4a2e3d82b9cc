#!/usr/bin/env python3
"""A model of Slurm's scontrol/sinfo (for the unit tests of node_drain) and the lab's kubectl stand-in.

The lab runs a real Slurm (lab/slurmlab.py, docs/lab.md): the Slurm half here is what
tests/unit/host/test_drain.py and host/test_breaker.py run the module against, its formats checked
against the real slurmctld by tests/integration/audit/test_remediate.py. The kubectl half is the lab's
stand-in for a Kubernetes API server, which is not installable here.

They keep each node's scheduler state (Slurm: state, reason, who and when;
Kubernetes: unschedulable, taints, annotations) in JSON files under
``$LINERATE_LAB_STATE_DIR/schedsim/`` (default lab/state/schedsim/), and
answer with the real tools' output formats and argument grammar - what the
real tool refuses, they refuse. Sources (docs/conformance.md, "Schedulers"):

* scontrol: SchedMD/slurm src/scontrol/update_node.c (scontrol_update_node:
  the keys update accepts, each abbreviable to a minimum length, the State
  values, "You must specify a reason when DOWNING or DRAINING a node. Request
  denied", "Update of this parameter is not supported: X", "Invalid input: X"),
  src/api/node_info.c (slurm_sprint_node_table: the ``show node`` record,
  ``Reason=<text> [<user>@<time>]``); scontrol(1) and sinfo(1) (Slurm 23.11/24.05).
* kubectl: kubernetes/kubectl pkg/cmd/taint/taint.go ("node/<n> tainted",
  "error: node <n> already has <key> taint(s) with same effect(s) and
  --overwrite is false"), pkg/cmd/drain (cordon / uncordon), the core/v1 Node
  object (spec.unschedulable, spec.taints[] key/value/effect/timeAdded).

The lab's inventory points the remediate role's remediate_kubectl at
lab/schedsim/kubectl. Not modelled (refused, named): jobs on
a node (every node is IDLE until drained), partitions other than ``gpu``,
kubectl's other verbs and output formats.

    schedsim.py init --nodes node1,node2,...   the lab's nodes, in service (both schedulers)
    schedsim.py state                          print the state files
"""

import contextlib
import datetime
import fcntl
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
STATE_DIR = os.path.join(os.environ.get("LINERATE_LAB_STATE_DIR", os.path.join(os.path.dirname(HERE), "state")), "schedsim")
USER = "root"
SLURM_VERSION = "23.11.4"


def _now():
    return datetime.datetime.now().strftime("%Y-%m-%dT%H:%M:%S")


@contextlib.contextmanager
def state(kind):
    """The state file of ``kind`` (slurm / kubernetes), locked for the command's duration."""
    os.makedirs(STATE_DIR, exist_ok=True)
    path = os.path.join(STATE_DIR, f"{kind}.json")
    with open(os.path.join(STATE_DIR, ".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(path) as f:
                data = json.load(f)
        except FileNotFoundError:
            data = {"nodes": {}}
        before = json.dumps(data, sort_keys=True)
        yield data
        if json.dumps(data, sort_keys=True) != before:
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.replace(tmp, path)


class Exit(Exception):
    def __init__(self, rc, out="", err=""):
        super().__init__(err or out)
        self.rc, self.out, self.err = rc, out, err


# ---------------------------------------------------------------- Slurm


def _abbrev(tag, full, minimum):
    """xstrncasecmp(tag, full, MAX(strlen(tag), minimum)) == 0: ``tag`` abbreviates ``full``."""
    m = max(len(tag), minimum)
    return tag.lower()[:m] == full.lower()[:m]


# update_node.c scontrol_update_node: (key, minimum abbreviation), in the order it tests them.
UPDATE_KEYS = (
    ("NodeAddr", 5),
    ("NodeHostName", 5),
    ("NodeName", 1),
    ("ActiveFeatures", 3),
    ("CpuBind", 7),
    ("Extra", 1),
    ("Features", 1),
    ("AvailableFeatures", 3),
    ("Gres", 1),
    ("InstanceId", 9),
    ("InstanceType", 9),
    ("Weight", 1),
    ("Comment", 2),
    ("Reason", 1),
    ("ResumeAfter", 1),
    ("State", 1),
)
# State values update accepts (update_node.c), with their minimum abbreviation; the node_state_string
# names (DOWN, IDLE, ...) are matched after these, as the real code does.
UPDATE_STATES = (
    ("NoResp", 3),
    ("CANCEL_REBOOT", 3),
    ("DRAIN", 3),
    ("FAIL", 3),
    ("FUTURE", 3),
    ("RESUME", 3),
    ("POWER_DOWN_ASAP", 12),
    ("POWER_DOWN_FORCE", 12),
    ("POWER_DOWN", 7),
    ("POWER_UP", 7),
    ("UNDRAIN", 3),
)
BASE_STATES = ("UNKNOWN", "DOWN", "IDLE", "ALLOCATED", "ERROR", "MIXED", "FUTURE")
MODELLED_STATES = ("DRAIN", "RESUME", "UNDRAIN", "DOWN", "FAIL", "IDLE")


def slurm_state_string(node):
    return node["base"] + "".join("+" + f for f in node["flags"])


def show_node(node, one_liner=False):
    """The record of slurm_sprint_node_table for a lab node (an idle GPU node with 8 GPUs)."""
    lines = [
        f"NodeName={node['name']} Arch=x86_64 CoresPerSocket=32 ",
        "CPUAlloc=0 CPUEfctv=128 CPUTot=128 CPULoad=0.00",
        "AvailableFeatures=(null)",
        "ActiveFeatures=(null)",
        "Gres=gpu:8",
        f"NodeAddr={node['name']} NodeHostName={node['name']} Version={SLURM_VERSION}",
        "OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01) ",
        "RealMemory=1031000 AllocMem=0 FreeMem=1000000 Sockets=2 Boards=1",
        f"State={slurm_state_string(node)} ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A",
        "Partitions=gpu ",
        f"BootTime={node['boot']} SlurmdStartTime={node['boot']}",
        f"LastBusyTime={node['boot']} ResumeAfterTime=None",
        "CfgTRES=cpu=128,mem=1031000M,billing=128,gres/gpu=8",
        "AllocTRES=",
        "CurrentWatts=0 AveWatts=0",
    ]
    if node.get("reason"):
        lines.append(f"Reason={node['reason']} [{node['reason_user']}@{node['reason_time']}]")
    return (" " if one_liner else "\n   ").join(lines) + ("\n" if one_liner else "\n\n")


def _nodelist(expr):
    """A Slurm hostlist: names separated by commas, with [a-b,c] ranges (node[1-3,5])."""
    out = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]+)\])?([^,]*)", expr):
        head, ranges, tail = m.groups()
        if not ranges:
            out.append(head + tail)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            for i in range(int(lo), int(hi or lo) + 1):
                out.append(f"{head}{str(i).zfill(len(lo))}{tail}")
    return out


def scontrol(argv):
    args = list(argv)
    one_liner = False
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        if opt in ("-o", "--oneliner"):
            one_liner = True
        elif opt in ("-Q", "--quiet", "-v", "--verbose"):
            continue
        else:
            raise Exit(1, err=f"scontrol: unrecognized option '{opt}'\nTry \"scontrol --help\" for more information\n")
    if not args:
        raise Exit(1, err="schedsim: interactive scontrol is not modelled; give a command\n")
    cmd, rest = args[0], args[1:]
    if _abbrev(cmd, "show", 3):
        return _show(rest, one_liner)
    if _abbrev(cmd, "update", 1):
        return _update(rest)
    raise Exit(1, err=f"invalid keyword: {cmd}\n")


def _show(rest, one_liner):
    if not rest or not _abbrev(rest[0], "nodes", 1):
        raise Exit(1, err=f"schedsim: scontrol show {' '.join(rest[:1]) or ''}: only 'show node' is modelled\n")
    with state("slurm") as s:
        names = _nodelist(rest[1]) if len(rest) > 1 else sorted(s["nodes"])
        found = [s["nodes"][n] for n in names if n in s["nodes"]]
        if not found:
            raise Exit(1, out=f"Node {rest[1] if len(rest) > 1 else ''} not found\n")
        return "".join(show_node(n, one_liner) for n in found)


def _update(rest):
    if not rest:
        raise Exit(1, err="No changes specified\n")
    msg = {}
    for arg in rest:
        if "=" not in arg:
            raise Exit(1, err=f"scontrol: error: Invalid input: {arg}  Request aborted\n")
        tag, val = arg.split("=", 1)
        key = next((k for k, n in UPDATE_KEYS if _abbrev(tag, k, n)), None)
        if key is None:
            raise Exit(1, err=f"Update of this parameter is not supported: {arg}\nRequest aborted\n")
        if key == "Reason":
            val = val[1:] if val.startswith('"') else val
            val = val[:-1] if val.endswith('"') else val
        if key == "State":
            st = next((k for k, n in UPDATE_STATES if _abbrev(val, k, n)), None)
            if st is None:
                st = next((b for b in BASE_STATES if _abbrev(val, b, 3)), None)
            if st is None:
                raise Exit(
                    1,
                    err=f"Invalid input: {arg}\nRequest aborted\nValid states are: NoResp DRAIN FAIL "
                    "FUTURE RESUME POWER_DOWN POWER_UP UNDRAIN\nNot all states are valid given a "
                    "node's prior state\n",
                )
            val = st
        msg[key] = val
    if "NodeName" not in msg:
        raise Exit(1, err="slurm_update error: Invalid node name specified\n")
    st = msg.get("State")
    if st in ("DOWN", "DRAIN", "FAIL") and not msg.get("Reason"):
        raise Exit(1, err="You must specify a reason when DOWNING or DRAINING a node. Request denied\n")
    if "ResumeAfter" in msg and st not in ("DOWN", "DRAIN"):
        raise Exit(1, err="You can only specify a resume time when DOWNING or DRAINING a node. Request denied\n")
    if len(msg) == 1:
        raise Exit(1, err="No changes specified\n")
    unmodelled = sorted(set(msg) - {"NodeName", "State", "Reason"})
    if unmodelled or (st is not None and st not in MODELLED_STATES):
        raise Exit(1, err=f"schedsim: update of {', '.join(unmodelled) or 'State=' + st} is not modelled in the lab\n")
    with state("slurm") as s:
        names = _nodelist(msg["NodeName"])
        if any(n not in s["nodes"] for n in names):
            raise Exit(1, err="slurm_update error: Invalid node name specified\n")
        for n in names:
            _apply(s["nodes"][n], st, msg.get("Reason"))
    return ""


def _apply(node, st, reason):
    """slurmctld's update of one node (src/slurmctld/node_mgr.c update_node), for the modelled states."""
    drained = "DRAIN" in node["flags"]
    if st in ("RESUME", "UNDRAIN"):
        if st == "RESUME" and not (drained or node["base"] in ("DOWN",) or "FAIL" in node["flags"]):
            raise Exit(1, err="slurm_update error: Invalid node state specified\n")
        node["flags"] = [f for f in node["flags"] if f not in ("DRAIN", "FAIL")]
        if st == "RESUME" and node["base"] == "DOWN":
            node["base"] = "IDLE"
        if node["base"] != "DOWN":
            node.update(reason=None, reason_user=None, reason_time=None)
        return
    if st in ("DRAIN", "FAIL"):
        flag = st
        if flag not in node["flags"]:
            node["flags"].append(flag)
    elif st == "DOWN":
        node["base"] = "DOWN"
    elif st == "IDLE":
        node["base"] = "IDLE"
    if reason:
        node.update(reason=reason, reason_user=USER, reason_time=_now())


SINFO_FIELDS = {
    "N": ("NODELIST", "name"),
    "T": ("STATE", "long"),
    "t": ("STATE", "short"),
    "E": ("REASON", "reason"),
    "H": ("TIMESTAMP", "time"),
    "u": ("USER", "user"),
}


def _sinfo_state(node, long):
    """sinfo's state name (sinfo(1) NODE STATE CODES): drained / draining(drng) / down / idle ..."""
    if "DRAIN" in node["flags"]:
        base = "drained" if node["base"] in ("IDLE", "DOWN") else "draining"
        return base if long else {"drained": "drain", "draining": "drng"}[base]
    return node["base"].lower() if long else node["base"].lower()[:5]


def sinfo(argv):
    args, header, fmt, names, reasons = list(argv), True, None, None, False
    while args:
        a = args.pop(0)
        if a in ("-h", "--noheader"):
            header = False
        elif a in ("-N", "--Node"):
            continue  # one line per node is what this stand-in prints
        elif a in ("-R", "--list-reasons"):
            reasons = True
        elif a in ("-o", "-n") and args:
            val = args.pop(0)
            fmt, names = (val, names) if a == "-o" else (fmt, _nodelist(val))
        elif a.startswith("--format="):
            fmt = a.split("=", 1)[1]
        elif a.startswith("--nodes="):
            names = _nodelist(a.split("=", 1)[1])
        else:
            raise Exit(1, err=f"schedsim: sinfo {a}: not modelled (sinfo -R | -N [-h] [-n NODES] [-o FORMAT])\n")
    if fmt is None:
        if not reasons:
            raise Exit(1, err="schedsim: sinfo's partition summary is not modelled; use -R or -N -o FORMAT\n")
        fmt = "%50E %9u %19H %N"
    with state("slurm") as s:
        nodes = [s["nodes"][n] for n in (names or sorted(s["nodes"])) if n in s["nodes"]]
    if reasons:
        nodes = [n for n in nodes if n.get("reason")]
    specs = re.findall(r"%(\d*)([A-Za-z])|([^%]+)", fmt)
    for _w, c, _lit in specs:
        if c and c not in SINFO_FIELDS:
            raise Exit(1, err=f"schedsim: sinfo format %{c}: not modelled (modelled: {' '.join('%' + k for k in SINFO_FIELDS)})\n")

    def row(values):
        out = ""
        for w, c, lit in specs:
            if lit:
                out += lit
                continue
            v = str(values[c])
            out += v.ljust(int(w))[: int(w)] if w else v
        return out.rstrip() + "\n"

    text = row({c: h for c, (h, _) in SINFO_FIELDS.items()}) if header else ""
    for n in nodes:
        text += row(
            {
                "N": n["name"],
                "T": _sinfo_state(n, True),
                "t": _sinfo_state(n, False),
                "E": n.get("reason") or "none",
                "H": n.get("reason_time") or "Unknown",
                "u": n.get("reason_user") or "Unknown",
            }
        )
    return text


# ---------------------------------------------------------------- Kubernetes

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# k8s.io/apimachinery pkg/util/validation: a qualified name (optional DNS-subdomain prefix) and a label value.
_QUALIFIED = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]"
)
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?")


def node_object(node):
    """The core/v1 Node as ``kubectl get node -o json`` prints it (the fields linerate and an operator read)."""
    spec = {"podCIDR": node["pod_cidr"]}
    if node["unschedulable"]:
        spec["unschedulable"] = True
    if node["taints"]:
        # core/v1 Taint field order: key, value (omitted when empty), effect, timeAdded
        spec["taints"] = [{k: t[k] for k in ("key", "value", "effect", "timeAdded") if t.get(k)} for t in node["taints"]]
    meta = {
        "name": node["name"],
        "uid": node["uid"],
        "resourceVersion": str(node["rv"]),
        "creationTimestamp": node["created"],
        "labels": {"kubernetes.io/hostname": node["name"], "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"},
    }
    if node["annotations"]:
        meta["annotations"] = node["annotations"]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "spec": spec,
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}]},
    }


def kubectl(argv):
    """kubectl's node commands the lab's scheduler sees (KUBECTL): the output, or Exit as kubectl fails."""
    args = [a for a in argv if a != "--overwrite"]
    overwrite = "--overwrite" in argv
    if not args:
        raise Exit(1, err="schedsim: kubectl needs a command\n")
    verb, rest = args[0], args[1:]
    with state("kubernetes") as s:
        command = KUBECTL.get(verb)
        if command is not None:
            return command(s, verb, rest, overwrite)
    raise Exit(1, err=f'error: unknown command "{verb}" for "kubectl"\n')


def _node(s, name):
    if name not in s["nodes"]:
        raise Exit(1, err=f'Error from server (NotFound): nodes "{name}" not found\n')
    return s["nodes"][name]


def _node_updates(s, rest, what):
    """The node of ``kubectl taint|annotate node NODE SPEC...`` and its specs (kubectl's error without one)."""
    if len(rest) < 3 or rest[0] not in ("node", "nodes", "no"):
        raise Exit(1, err=f"error: at least one {what} update is required\n")
    return _node(s, rest[1]), rest[2:]


def _kubectl_get(s, verb, rest, overwrite):
    """get node NAME -o json."""
    if rest[:1] not in (["node"], ["nodes"], ["no"]) or len(rest) != 4 or rest[2:] != ["-o", "json"]:
        raise Exit(1, err=f"schedsim: kubectl get {' '.join(rest)}: only 'get node NAME -o json' is modelled\n")
    return json.dumps(node_object(_node(s, rest[1])), indent=4) + "\n"


def _kubectl_cordon(s, verb, rest, overwrite):
    """cordon / uncordon NODE."""
    if len(rest) != 1:
        raise Exit(1, err=f"error: USAGE: {verb} NODE [flags]\n")
    n = _node(s, rest[0])
    want = verb == "cordon"
    if n["unschedulable"] == want:
        return f"node/{rest[0]} already {verb}ed\n"
    n["unschedulable"] = want
    # the node lifecycle controller (TaintNodesByCondition) mirrors spec.unschedulable as this taint
    n["taints"] = [t for t in n["taints"] if t["key"] != UNSCHEDULABLE_TAINT]
    if want:
        n["taints"].append({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule", "timeAdded": _now() + "Z"})
    n["rv"] += 1
    return f"node/{rest[0]} {verb}ed\n"


def _kubectl_taint(s, verb, rest, overwrite):
    """taint node NODE KEY[=VALUE]:EFFECT... / KEY[:EFFECT]-..."""
    n, specs = _node_updates(s, rest, "taint")
    adds, removes = [], []
    for spec in specs:
        if spec.endswith("-"):
            key, _, effect = spec[:-1].partition(":")
            if effect and effect not in TAINT_EFFECTS:
                raise Exit(1, err=f"error: invalid taint effect: {effect}, unsupported taint effect\n")
            removes.append((key, effect))
            continue
        kv, sep, effect = spec.rpartition(":")
        key, _, value = kv.partition("=")
        if not sep or effect not in TAINT_EFFECTS:
            raise Exit(1, err=f"error: invalid taint effect: {effect}, unsupported taint effect\n")
        if not _QUALIFIED.fullmatch(key) or len(key) > 316 or not _LABEL_VALUE.fullmatch(value):
            raise Exit(1, err=f"error: invalid taint spec: {spec}\n")
        adds.append({"key": key, "value": value, "effect": effect})
    taints = list(n["taints"])
    for key, effect in removes:
        left = [t for t in taints if not (t["key"] == key and (not effect or t["effect"] == effect))]
        if len(left) == len(taints):
            raise Exit(1, err=f'error: taint "{key}{":" + effect if effect else ""}" not found\n')
        taints = left
    for t in adds:
        same = [x for x in taints if x["key"] == t["key"] and x["effect"] == t["effect"]]
        if same and not overwrite:
            raise Exit(1, err=f"error: node {rest[1]} already has {t['key']} taint(s) with same effect(s) and --overwrite is false\n")
        taints = [x for x in taints if x not in same] + [t]
    n["taints"] = taints
    n["rv"] += 1
    return f"node/{rest[1]} {'untainted' if removes and not adds else 'tainted'}\n"


def _kubectl_annotate(s, verb, rest, overwrite):
    """annotate node NODE KEY=VALUE... / KEY-..."""
    n, specs = _node_updates(s, rest, "annotation")
    ann = dict(n["annotations"])
    for spec in specs:
        if spec.endswith("-") and "=" not in spec:
            ann.pop(spec[:-1], None)
            continue
        key, sep, value = spec.partition("=")
        if not sep or not _QUALIFIED.fullmatch(key):
            raise Exit(1, err=f"error: invalid annotation format: {spec}\n")
        if key in ann and ann[key] != value and not overwrite:
            raise Exit(1, err=f"error: --overwrite is false but found the following declared annotation(s): '{key}' already has a value ({ann[key]})\n")
        ann[key] = value
    n["annotations"] = ann
    n["rv"] += 1
    return f"node/{rest[1]} annotated\n"


KUBECTL = {"get": _kubectl_get, "cordon": _kubectl_cordon, "uncordon": _kubectl_cordon, "taint": _kubectl_taint, "annotate": _kubectl_annotate}

# ---------------------------------------------------------------- the lab's own commands


def init(names):
    """Every node in service in both schedulers (what a freshly booted cluster shows)."""
    now = _now()
    with state("slurm") as s:
        s["nodes"] = {n: {"name": n, "base": "IDLE", "flags": [], "reason": None, "reason_user": None, "reason_time": None, "boot": now} for n in names}
    with state("kubernetes") as s:
        s["nodes"] = {
            n: {
                "name": n,
                "unschedulable": False,
                "taints": [],
                "annotations": {},
                "rv": 1000 + i,
                "uid": f"00000000-0000-4000-8000-{i:012d}",
                "created": now + "Z",
                "pod_cidr": f"10.244.{i}.0/24",
            }
            for i, n in enumerate(names)
        }
    return f"schedsim: {len(names)} node(s) in service in {STATE_DIR}\n"


def main(argv=None):
    argv = sys.argv if argv is None else argv
    tool = os.path.basename(argv[0])
    try:
        if tool == "scontrol":
            out = scontrol(argv[1:])
        elif tool == "sinfo":
            out = sinfo(argv[1:])
        elif tool == "kubectl":
            out = kubectl(argv[1:])
        elif argv[1:2] == ["init"] and argv[2:3] == ["--nodes"] and len(argv) == 4:
            out = init([n for n in argv[3].split(",") if n])
        elif argv[1:2] == ["state"]:
            out = "".join(
                open(os.path.join(STATE_DIR, f"{k}.json")).read() for k in ("slurm", "kubernetes") if os.path.exists(os.path.join(STATE_DIR, f"{k}.json"))
            )
        else:
            raise Exit(2, err=__doc__.split("\n\n")[-1])
    except Exit as e:
        sys.stdout.write(e.out)
        sys.stderr.write(e.err)
        return e.rc
    sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
