# -*- coding: utf-8 -*-
# Copyright: linerate developers
# Apache License 2.0 (see galaxy.yml)
"""The job's own preflight (docs/launchers.md, "The job's preflight"): one POSIX sh script,
rendered from the same derivation as ``/etc/nccl.conf`` (intent/nccl_env.py: the rails NCCL_IB_HCA
lists, NCCL_SOCKET_IFNAME, NCCL_NET) and the fleet's NCCL release, that runs inside the job's
environment and image before the job's own program:

- Slurm: as ``TaskProlog`` (slurmstepd runs it as the job's user with the task's environment,
  before each task; a non-zero exit fails the task, ``TaskProlog failed status=N``, and leaves
  the node in service; its ``print <text>`` lines go to the task's output). ``Prolog`` runs as
  root outside the job's environment, so it cannot see what the job sees.
- Kubernetes: the same script as an init container of the worker pods, in the job's image, with
  the pod's RDMA resources, ``IPC_LOCK`` and ``/dev/shm`` (intent/k8s_render.py).

Each check that fails prints ``linerate: <CODE> <what, and what was expected>`` (codes in
module_utils/findings.py, ``PREFLIGHT_*``) and the script exits 1 before NCCL could hang or fall
back to TCP. Pure and stdlib only: ``preflight_script(params)`` -> text; ``check_params`` names
every bad key with its value and what is allowed.
"""

from __future__ import absolute_import, division, print_function

import re
import shlex

__metaclass__ = type

OUTPUTS = ("slurm", "plain")
GDR = ("auto", "yes", "no")
_DEV = re.compile(r"^[A-Za-z0-9_.-]+$")
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_PLUGIN = re.compile(r"^[A-Za-z0-9_.+-]+$")
DEFAULTS = {
    "output": "plain",
    "net_plugins": [],
    "min_memlock_kb": -1,
    "min_shm_mb": 1024,
    "gdr": "auto",
    "handshake": True,
    "handshake_program": "all_reduce_perf",
    "handshake_timeout_s": 60,
    "bootstrap_port": 29500,
    "mpirun": "mpirun",
}


def check_params(p: dict) -> list:
    """Every problem of the preflight's parameters, each naming the key, the value and what is allowed."""
    problems = []
    if p.get("output", "plain") not in OUTPUTS:
        problems.append(f"output: {p.get('output')!r} is not allowed (allowed: {' | '.join(OUTPUTS)})")
    rails = p.get("rails")
    if not isinstance(rails, list) or not rails:
        problems.append(
            f"rails: {rails!r} is not allowed (allowed: the rails NCCL_IB_HCA lists, [{{device, port, netdev}}], at least one: the nccl_env derivation's hcas)"
        )
    else:
        for i, r in enumerate(rails):
            for key in ("device", "netdev"):
                if not isinstance(r, dict) or not _DEV.match(str(r.get(key) or "")):
                    problems.append(
                        f"rails[{i}].{key}: {r.get(key) if isinstance(r, dict) else r!r} is not allowed (allowed: a device or interface name, [A-Za-z0-9_.-])"
                    )
            if isinstance(r, dict) and not str(r.get("port", 1)).isdigit():
                problems.append(f"rails[{i}].port: {r.get('port')!r} is not allowed (allowed: a port number)")
    if not _VERSION.match(str(p.get("nccl_version") or "")):
        problems.append(f"nccl_version: {p.get('nccl_version')!r} is not allowed (allowed: the fleet's NCCL release, major.minor.patch, e.g. 2.21.5)")
    for name in p.get("net_plugins") or []:
        if not _PLUGIN.match(str(name)):
            problems.append(f"net_plugins: {name!r} is not allowed (allowed: a plugin's library name, libnccl-net.so or libnccl-net-<name>.so)")
    for key, low in (("min_memlock_kb", -1), ("min_shm_mb", 0), ("handshake_timeout_s", 1)):
        value = p.get(key, DEFAULTS[key])
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            problems.append(
                f"{key}: {value!r} is not allowed (allowed: an integer >= {low}" + ("; -1 means unlimited" if key == "min_memlock_kb" else "") + ")"
            )
    port = p.get("bootstrap_port", DEFAULTS["bootstrap_port"])
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        problems.append(f"bootstrap_port: {port!r} is not allowed (allowed: a TCP port, 1..65535)")
    if p.get("gdr", "auto") not in GDR:
        problems.append(f"gdr: {p.get('gdr')!r} is not allowed (allowed: {' | '.join(GDR)})")
    for key in ("handshake_program", "mpirun"):
        if not re.match(r"^[A-Za-z0-9_./-]+$", str(p.get(key, DEFAULTS[key]))):
            problems.append(f"{key}: {p.get(key)!r} is not allowed (allowed: a program name or path)")
    return problems


def _q(value) -> str:
    return shlex.quote(str(value))


def _header(p: dict) -> list:
    rails = " ".join(f"{r['device']}:{int(r.get('port', 1))}:{r['netdev']}" for r in p["rails"])
    s = p.get("settings") or {}
    return [
        "#!/bin/sh",
        "# linerate job preflight: rendered by linerate (roles/job_preflight, intent/preflight.py) from the",
        "# derivation /etc/nccl.conf is written from; docs/launchers.md. Do not edit: the next run rewrites it.",
        f"RAILS={_q(rails)}",
        f"FLEET_SOCKET_IFNAME={_q(s.get('NCCL_SOCKET_IFNAME', ''))}",
        f"NCCL_WANT={_q(p['nccl_version'])}",
        f"PLUGINS_WANT={_q(' '.join(sorted(p.get('net_plugins') or [])))}",
        f"MIN_MEMLOCK_KB={int(p.get('min_memlock_kb', -1))}",
        f"MIN_SHM_MB={int(p.get('min_shm_mb', 1024))}",
        f"GDR={_q(p.get('gdr', 'auto'))}",
        f"HANDSHAKE={'1' if p.get('handshake', True) else '0'}",
        f"HANDSHAKE_PROGRAM={_q(p.get('handshake_program', 'all_reduce_perf'))}",
        f"HANDSHAKE_TIMEOUT={int(p.get('handshake_timeout_s', 60))}",
        f"MPIRUN={_q(p.get('mpirun', 'mpirun'))}",
        f"BOOTSTRAP_PORT={int(p.get('bootstrap_port', 29500))}",
        f"OUTPUT={_q(p.get('output', 'plain'))}",
        "PATH=${PATH:-/usr/local/bin:/usr/bin:/bin}:/usr/local/sbin:/usr/sbin:/sbin; export PATH",
        "failed=0",
        "",
        "# one line per problem; under Slurm's TaskProlog a 'print' line reaches the task's output",
        "say() {",
        '    [ "$OUTPUT" = slurm ] && echo "print linerate: $*"',
        '    echo "linerate: $*" >&2',
        "}",
        'fail() { say "$@"; failed=1; }',
        "",
    ]


# Each check is a shell function; the order is the order a hang would be met in.
_CHECKS = r"""
check_rdma() {
    # the rails' devices and netdevs as the job sees them: the verbs device files a container gets only
    # with its RDMA resource (/dev/infiniband/uverbs*), the device in sysfs, the netdev and its state
    n=0
    for r in $RAILS; do
        dev=${r%%:*}; rest=${r#*:}; netdev=${rest#*:}
        n=$((n + 1))
        if [ -d /sys/class/infiniband ] && [ ! -e "/sys/class/infiniband/$dev" ]; then
            fail "PREFLIGHT_RDMA_DEVICE $dev (NCCL_IB_HCA) is not visible in the job: no /sys/class/infiniband/$dev"
        fi
        if [ -d /sys/class/infiniband_verbs ]; then
            found=
            for v in /sys/class/infiniband_verbs/uverbs*; do
                [ "$(cat "$v/ibdev" 2>/dev/null)" = "$dev" ] && [ -e "/dev/infiniband/${v##*/}" ] && found=1
            done
            [ -n "$found" ] || fail "PREFLIGHT_RDMA_DEVICE $dev has no verbs device file in the job (/dev/infiniband/uverbs* for $dev)"
        fi
        if [ ! -e "/sys/class/net/$netdev" ]; then
            fail "PREFLIGHT_RDMA_DEVICE rail netdev $netdev ($dev) is not visible in the job"
        elif [ "$(cat "/sys/class/net/$netdev/operstate" 2>/dev/null)" = down ]; then
            fail "PREFLIGHT_RDMA_DEVICE rail netdev $netdev ($dev) is down"
        fi
    done
    have=$(ls /dev/infiniband 2>/dev/null | grep -c '^uverbs')
    if [ "$have" -lt "$n" ]; then
        fail "PREFLIGHT_RDMA_DEVICE the job sees $have verbs device file(s) in /dev/infiniband, the node has $n rail(s)" \
            "(expected: one uverbs per rail; a pod needs its RDMA resource)"
    fi
}

check_memlock() {
    have=$(ulimit -l)
    if [ "$have" = unlimited ]; then return 0; fi
    # CAP_IPC_LOCK (bit 14 of the effective set; a pod's securityContext adds it) lets a process lock
    # memory beyond RLIMIT_MEMLOCK: what registration needs then holds whatever the limit says
    cap=$(awk '/^CapEff:/ {print $2}' /proc/self/status 2>/dev/null)
    if [ -n "$cap" ] && [ $(( (0x$cap >> 14) & 1 )) = 1 ]; then return 0; fi
    if [ "$MIN_MEMLOCK_KB" -lt 0 ]; then
        fail "PREFLIGHT_MEMLOCK RLIMIT_MEMLOCK in the job is $have KiB (expected: unlimited; Slurm:" \
            "PropagateResourceLimitsExcept=MEMLOCK and slurmd's LimitMEMLOCK=infinity; a pod: IPC_LOCK)"
    elif [ "$have" -lt "$MIN_MEMLOCK_KB" ]; then
        fail "PREFLIGHT_MEMLOCK RLIMIT_MEMLOCK in the job is $have KiB (expected: at least $MIN_MEMLOCK_KB KiB)"
    fi
}

check_shm() {
    kb=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 {print $2}')
    if [ -z "$kb" ]; then
        fail "PREFLIGHT_SHM /dev/shm is not mounted in the job (expected: at least $MIN_SHM_MB MiB)"
    elif [ $((kb / 1024)) -lt "$MIN_SHM_MB" ]; then
        fail "PREFLIGHT_SHM /dev/shm in the job is $((kb / 1024)) MiB (expected: at least $MIN_SHM_MB MiB; a pod: a memory emptyDir)"
    fi
}

libdirs() {
    # where the dynamic loader looks for libnccl.so.2: LD_LIBRARY_PATH first, then the system's directories
    old=$IFS; IFS=:
    for d in ${LD_LIBRARY_PATH:-}; do [ -n "$d" ] && echo "$d"; done
    IFS=$old
    ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 / {sub(/\/[^\/]*$/, "", $NF); print $NF}'
    for d in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/local/lib /usr/lib; do echo "$d"; done
}

check_nccl() {
    lib=
    for d in $(libdirs); do
        if [ -e "$d/libnccl.so.2" ]; then lib="$d/libnccl.so.2"; break; fi
    done
    if [ -z "$lib" ]; then
        fail "PREFLIGHT_NCCL_VERSION no libnccl.so.2 in the job's library path (LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}; expected: NCCL $NCCL_WANT)"
        return
    fi
    have=$(grep -a -o 'NCCL version [0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*' "$lib" 2>/dev/null | head -n 1)
    have=${have#NCCL version }
    if [ -z "$have" ]; then
        fail "PREFLIGHT_NCCL_VERSION $lib carries no NCCL version string (expected: NCCL $NCCL_WANT)"
    elif [ "$have" != "$NCCL_WANT" ]; then
        fail "PREFLIGHT_NCCL_VERSION the job's NCCL is $have ($lib), the fleet's is $NCCL_WANT"
    fi
    # net plugins: the one NCCL_NET_PLUGIN names, else every libnccl-net*.so beside the loader's path
    if [ -n "${NCCL_NET_PLUGIN:-}" ]; then
        plugins=$NCCL_NET_PLUGIN
    else
        plugins=$(for d in $(libdirs); do ls "$d" 2>/dev/null | grep '^libnccl-net.*\.so$'; done | sort -u | tr '\n' ' ')
    fi
    plugins=$(echo $plugins)
    if [ "$plugins" != "$PLUGINS_WANT" ]; then
        fail "PREFLIGHT_NET_PLUGIN the job's NCCL net plugins are '${plugins:-none: NCCL internal}', the fleet's '${PLUGINS_WANT:-none: NCCL internal}'"
    fi
}

ifname_matches() {
    # NCCL's NCCL_SOCKET_IFNAME: a comma list of prefixes, '=' for exact names, '^' to exclude
    _spec=$1; _name=$2; _ex=; _exact=; _hit=
    case $_spec in ^*) _ex=1; _spec=${_spec#^} ;; esac
    case $_spec in =*) _exact=1; _spec=${_spec#=} ;; esac
    _old=$IFS; IFS=,
    for _pfx in $_spec; do
        if [ -n "$_exact" ]; then [ "$_name" = "$_pfx" ] && _hit=1
        else case $_name in "$_pfx"*) _hit=1 ;; esac
        fi
    done
    IFS=$_old
    if [ -n "$_ex" ]; then [ -z "$_hit" ]; else [ -n "$_hit" ]; fi
}

check_socket_ifname() {
    spec=${NCCL_SOCKET_IFNAME:-$FLEET_SOCKET_IFNAME}
    [ -n "$spec" ] || return 0
    ok=; seen=
    for path in /sys/class/net/*; do
        name=${path##*/}
        [ "$name" = lo ] && [ "${spec#*lo}" = "$spec" ] && continue
        ifname_matches "$spec" "$name" || continue
        seen="$seen $name"
        if ip -o -4 addr show dev "$name" 2>/dev/null | grep -q ' inet '; then ok=1; SOCKET_DEVS="$SOCKET_DEVS $name"; fi
    done
    if [ -z "$seen" ]; then
        fail "PREFLIGHT_SOCKET_IFNAME NCCL_SOCKET_IFNAME=$spec names no interface in the job (NCCL: 'no socket interface found')"
    elif [ -z "$ok" ]; then
        fail "PREFLIGHT_SOCKET_IFNAME NCCL_SOCKET_IFNAME=$spec matches$seen, none with an IPv4 address"
    fi
}

check_bootstrap() {
    # the rendezvous: MASTER_ADDR:MASTER_PORT (torchrun, DeepSpeed; slurm-env.sh), else the job's first node
    port=${MASTER_PORT:-$BOOTSTRAP_PORT}
    addr=${MASTER_ADDR:-}
    if [ -z "$addr" ] && [ -n "${SLURM_JOB_NODELIST:-}" ]; then
        addr=$(scontrol show hostnames "$SLURM_JOB_NODELIST" 2>/dev/null | head -n 1)
    fi
    if [ -z "$addr" ]; then
        say "note: the bootstrap port is not checked: no MASTER_ADDR and no job node list"
        return 0
    fi
    me=$(hostname)
    if [ "$addr" = "$me" ] || ip -o addr show 2>/dev/null | grep -q " inet $addr/"; then
        hex=$(printf '%04X' "$port")
        if awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A"' /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -q .; then
            fail "PREFLIGHT_BOOTSTRAP the bootstrap port $port is already taken on $me (the job's first node): rank 0 cannot listen"
        fi
        return 0
    fi
    ipaddr=$addr
    case $addr in
        *[!0-9.]*) ipaddr=$(getent ahostsv4 "$addr" 2>/dev/null | awk 'NR == 1 {print $1}') ;;
    esac
    if [ -z "$ipaddr" ]; then
        say "note: the bootstrap port is not checked: $addr (the job's first node) does not resolve here"
        return 0
    fi
    dev=$(ip route get "$ipaddr" 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -n 1)
    if [ -z "$dev" ]; then
        fail "PREFLIGHT_BOOTSTRAP no route from $me to the bootstrap address $addr:$port"
    elif [ -n "$SOCKET_DEVS" ] && ! echo " $SOCKET_DEVS " | grep -q " $dev "; then
        fail "PREFLIGHT_BOOTSTRAP $addr:$port is reached through $dev, not through NCCL_SOCKET_IFNAME's$SOCKET_DEVS"
    fi
}

check_handshake() {
    # two ranks on this node, P2P and SHM off: every byte leaves through the rail's NIC (NET/IB), one rail
    # at a time; the first task of each node only (SLURM_LOCALID 0). GDRDMA where GPUDirect RDMA applies.
    [ "$HANDSHAKE" = 1 ] || return 0
    [ "${SLURM_LOCALID:-0}" = 0 ] || return 0
    if ! command -v "$HANDSHAKE_PROGRAM" >/dev/null 2>&1 || ! command -v "$MPIRUN" >/dev/null 2>&1; then
        fail "PREFLIGHT_NET_IB the handshake cannot run: $HANDSHAKE_PROGRAM or $MPIRUN is not in the job's PATH"
        return
    fi
    for r in $RAILS; do
        dev=${r%%:*}; rest=${r#*:}; port=${rest%%:*}
        # a clean environment: mpirun inside a Slurm step would launch through srun
        out=$(env -i PATH="$PATH" HOME="${HOME:-/tmp}" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" \
            timeout "$HANDSHAKE_TIMEOUT" "$MPIRUN" --allow-run-as-root -np 2 -H localhost:2 --bind-to none \
            -x NCCL_IB_HCA="=$dev:$port" -x NCCL_P2P_DISABLE=1 -x NCCL_SHM_DISABLE=1 -x NCCL_NET=IB \
            -x NCCL_DEBUG=INFO -x NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-$FLEET_SOCKET_IFNAME}" \
            ${NCCL_IB_GID_INDEX:+-x NCCL_IB_GID_INDEX="$NCCL_IB_GID_INDEX"} \
            "$HANDSHAKE_PROGRAM" -b 8 -e 8 -g 1 -n 1 -w 0 2>&1)
        rc=$?
        line=$(echo "$out" | grep -E 'via NET/|NET/Socket' | head -n 1)
        if [ "$rc" -eq 124 ]; then
            fail "PREFLIGHT_NET_IB $dev: the 2-rank handshake did not finish in ${HANDSHAKE_TIMEOUT}s (NCCL would hang)"
        elif echo "$out" | grep -q 'NET/Socket'; then
            fail "PREFLIGHT_NET_IB $dev: the 2-rank handshake fell back to NET/Socket (TCP): ${line:-}"
        elif [ "$rc" -ne 0 ] || ! echo "$out" | grep -q 'via NET/IB'; then
            fail "PREFLIGHT_NET_IB $dev: the 2-rank handshake failed (rc $rc): $(echo "$out" | grep -iE 'error|fail|warn' | head -n 1)"
        elif [ "$GDR" = yes ] && ! echo "$out" | grep -q 'GDRDMA'; then
            fail "PREFLIGHT_NET_IB $dev: NET/IB without GPUDirect RDMA (expected GDRDMA): $line"
        fi
    done
}

SOCKET_DEVS=
check_rdma
check_memlock
check_shm
check_nccl
check_socket_ifname
check_bootstrap
"""

_TAIL = r"""
# the handshake only where the job can run NCCL at all
[ "$failed" = 0 ] && check_handshake
if [ "$failed" != 0 ]; then
    say "preflight failed on $(hostname): the job is refused before NCCL can hang or fall back to TCP (docs/launchers.md)"
    exit 1
fi
exit 0
"""


def preflight_script(params: dict) -> str:
    """The preflight's text for ``params`` (``rails``, ``settings``: the NCCL settings of the
    derivation, ``nccl_version``: the fleet's, ``net_plugins``, ``min_memlock_kb``, ``min_shm_mb``,
    ``gdr``, ``handshake``, ``handshake_program``, ``bootstrap_port``, ``output``: slurm | plain).
    ValueError with every problem of the parameters."""
    p = dict(DEFAULTS, **{k: v for k, v in (params or {}).items() if v is not None})
    problems = check_params(p)
    if problems:
        raise ValueError("job preflight: " + "; ".join(problems))
    return "\n".join(_header(p)) + _CHECKS + _TAIL
