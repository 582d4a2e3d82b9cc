"""Pieces shared by the three switch simulators: persistence, the fabric
model bridge, natural sort, fault bookkeeping."""

import abc
import json
import os
import re
import shlex
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "sim"))

from linerate_lab import model  # noqa: E402  (lab/sim on sys.path)


def natural_key(name):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def bash_words(line):
    """(words, None) of one command line as bash splits it; (None, the answer) for a blank line (nothing)
    and for an unterminated quote (bash's syntax error)."""
    if not line.strip():
        return None, ""
    try:
        return shlex.split(line), None
    except ValueError as exc:
        return None, f"-bash: syntax error: {exc}"


class Exit(Exception):
    """The user logged out."""


class Drop(Exception):
    """Fault: the SSH session drops (``after``: once the command has run)."""

    def __init__(self, after=False):
        super().__init__("drop")
        self.after = after


class Hang(Exception):
    """Fault: the switch stops answering (``after``: once the command has run)."""

    def __init__(self, after=False):
        super().__init__("hang")
        self.after = after


FAULT_KINDS = ("reject", "drop", "drop_after", "hang", "hang_after")


class Platform(abc.ABC):
    """State of one simulated switch. Subclasses implement the CLI."""

    platform = None

    def __init__(self, name, spec, store):
        self.name = name
        self.spec = spec
        self.store = store  # Store (persistence + model publishing)
        self.ports = sorted(spec.get("ports", {}), key=natural_key)
        self.link_down = set()  # fault: oper down
        self.rejects = []  # faults: [{"kind", "match": regex, "count": n, "skip": n}]
        self.loop = None  # asyncio loop (timers)
        self.no_headroom = set()  # fault: ports whose buffer carving left no lossless headroom
        self.pfcwd_disabled = False  # fault: the switch's PFC watchdog stopped
        self.fs = {}  # the Linux side's files the shell subset made: {path: None (dir) | text}
        self.fs_mtime = {}  # their modification times, epoch seconds on the switch's clock
        self.clock_skew_s = 0  # the switch's clock minus the controller's (a switch without NTP)

    # persistence ---------------------------------------------------------
    @abc.abstractmethod
    def to_json(self):
        """Platform-specific."""

    @abc.abstractmethod
    def from_json(self, data):
        """Platform-specific."""

    @abc.abstractmethod
    def factory(self):
        """Platform-specific."""

    def changed(self):
        """Config changed: persist and publish the per-port state to the model."""
        self.store.save(self)
        self.store.publish(self)

    # CLI -----------------------------------------------------------------
    def new_context(self, username):
        return {"user": username, "mode": [], "term_length": 0, "ask": None}

    def banner(self, ctx):
        return ""

    @abc.abstractmethod
    def prompt(self, ctx):
        """Platform-specific."""

    @abc.abstractmethod
    def execute(self, ctx, line):
        """Platform-specific."""

    def fault_for(self, line, kinds):
        """The kind of the first armed fault of ``kinds`` whose regex matches ``line``.

        A fault lets its first ``skip`` matches through (to hit the read-back,
        not the first read), then fires ``count`` times.
        """
        for r in self.rejects:
            if r.get("kind", "reject") not in kinds or r["count"] <= 0 or not re.search(r["match"], line):
                continue
            if r.get("skip", 0) > 0:
                r["skip"] -= 1
                continue
            r["count"] -= 1
            return r.get("kind", "reject")
        return None

    def check_reject(self, line):
        return self.fault_for(line, ("reject",)) is not None

    def run_line(self, ctx, line):
        """execute() with the session faults: Drop/Hang before or after the command runs."""
        kind = self.fault_for(line.strip(), ("drop", "drop_after", "hang", "hang_after"))
        if kind in ("drop", "hang"):
            raise Drop() if kind == "drop" else Hang()
        out = self.execute(ctx, line)
        if kind == "drop_after":
            raise Drop(after=True)
        if kind == "hang_after":
            raise Hang(after=True)
        return out

    # Linux shell subset -----------------------------------------------------
    # The switch's Linux shell (bash on SONiC and Cumulus; EOS's ``bash timeout <s> <cmd>``), only the
    # forms the change window's lock uses: ``mkdir P && echo 'LINE' > P/holder``, ``cat F [2>/dev/null]``,
    # ``rm -rf P``, ``stat -c FMT P`` (%Y: the modification time), ``date +FMT`` (%s: the switch's clock, epoch
    # seconds), joined by ``&&`` or ``;``, as coreutils word them. Directories that exist: the FHS ones below (/var/lock is
    # Debian's link to /run/lock, systemd tmpfiles legacy.conf). File permissions are not modelled.
    SHELL_DIRS = ("/", "/run", "/run/lock", "/var", "/var/lock", "/var/tmp", "/tmp")
    SHELL_COMMANDS = ("mkdir", "cat", "rm", "echo", "stat", "date")

    def now(self):
        """The switch's own clock (epoch seconds): the controller's plus the skew a test sets."""
        return int(time.time() + self.clock_skew_s)

    def _norm(self, path):
        path = os.path.normpath(path)
        return "/run/lock" + path[len("/var/lock") :] if path == "/var/lock" or path.startswith("/var/lock/") else path

    def _isdir(self, path):
        return path in [self._norm(d) for d in self.SHELL_DIRS] or (path in self.fs and self.fs[path] is None)

    def shell(self, line):
        """Run one line of the shell subset: (output, status). Simple commands joined by ``&&`` (the next runs
        only when this one succeeded) or ``;`` (it runs anyway); ``> F`` writes stdout to F, ``2>/dev/null``
        drops stderr."""
        try:
            toks = shlex.split(line)
        except ValueError as exc:
            return f"-bash: syntax error: {exc}", 2
        out, rc, cmd = [], 0, []
        skip = False
        for tok in toks + [";"]:
            if tok not in ("&&", ";"):
                cmd.append(tok)
                continue
            if not cmd:
                return f"-bash: syntax error near unexpected token `{tok}'", 2
            if not skip:
                text, rc = self._simple(cmd)
                if text:
                    out.append(text)
            cmd = []
            # after &&, a failure skips the next command; ; runs it whatever the status
            skip = bool(rc) and tok == "&&"
        return "\n".join(out), rc

    def _simple(self, argv):
        """One simple command: its redirections (``> F``, ``2>/dev/null``) taken off, run from the command
        table (``_sh_<name>``: (stdout, stderr, status)); a command the platform's shell lacks is not found."""
        redirect, quiet, args = None, False, []
        i = 0
        while i < len(argv):
            if argv[i] == ">" and i + 1 < len(argv):
                redirect, i = argv[i + 1], i + 2
                continue
            if argv[i] == "2>/dev/null":
                quiet, i = True, i + 1
                continue
            args.append(argv[i])
            i += 1
        if args and args[0] == "sudo":
            args = args[1:]
        if not args or args[0] not in self.SHELL_COMMANDS:
            return f"-bash: {(args or [''])[0]}: command not found", 127
        run = getattr(self, "_sh_" + args[0], None)
        stdout, err, rc = run(args[1:]) if run is not None else ("", "", 0)
        if redirect is not None:
            n = self._norm(redirect)
            if not self._isdir(os.path.dirname(n)):
                return f"-bash: {redirect}: No such file or directory", 1
            if self._isdir(n):
                return f"-bash: {redirect}: Is a directory", 1
            self.fs[n] = stdout
            self.fs_mtime[n] = self.now()
            stdout = ""
        self.store.save(self)
        text = stdout.rstrip("\n")
        if err and not quiet:
            text = (text + "\n" + err) if text else err
        return text, rc

    # the shell's commands (coreutils' messages): each (stdout, stderr, status); the last error wins
    def _sh_mkdir(self, rest):
        err, rc = "", 0
        if not rest:
            err, rc = "mkdir: missing operand\nTry 'mkdir --help' for more information.", 1
        for p in rest:
            n = self._norm(p)
            if self._isdir(n) or n in self.fs:
                err, rc = f"mkdir: cannot create directory '{p}': File exists", 1
            elif not self._isdir(os.path.dirname(n)):
                err, rc = f"mkdir: cannot create directory '{p}': No such file or directory", 1
            else:
                self.fs[n] = None
                self.fs_mtime[n] = self.now()
        return "", err, rc

    def _sh_stat(self, rest):
        if len(rest) != 3 or rest[0] != "-c":
            return "", "stat: this simulator answers stat -c FORMAT FILE only", 1
        n = self._norm(rest[2])
        if n not in self.fs and not self._isdir(n):
            return "", f"stat: cannot statx '{rest[2]}': No such file or directory", 1
        return rest[1].replace("%Y", str(self.fs_mtime.get(n, 0))) + "\n", "", 0

    def _sh_date(self, rest):
        if len(rest) != 1 or not rest[0].startswith("+"):
            return "", "date: this simulator answers date +FORMAT only", 1
        return rest[0][1:].replace("%s", str(self.now())) + "\n", "", 0

    def _sh_cat(self, rest):
        texts, err, rc = [], "", 0
        for p in rest:
            n = self._norm(p)
            if self._isdir(n):
                err, rc = f"cat: {p}: Is a directory", 1
            elif n not in self.fs:
                err, rc = f"cat: {p}: No such file or directory", 1
            else:
                texts.append(self.fs[n])
        return "".join(texts), err, rc

    def _sh_rm(self, rest):
        opts = [a for a in rest if a.startswith("-")]
        paths = [a for a in rest if not a.startswith("-")]
        bad = [o for o in opts if set(o[1:]) - set("rfR")]
        recursive, force = any(set(o) & set("rR") for o in opts), any("f" in o for o in opts)
        if bad:
            return "", f"rm: invalid option -- '{bad[0][1:]}'", 1
        err, rc = "", 0
        for p in paths:
            n = self._norm(p)
            if self._isdir(n) and n not in self.fs:
                err, rc = f"rm: cannot remove '{p}': Permission denied", 1
            elif n not in self.fs:
                if not force:
                    err, rc = f"rm: cannot remove '{p}': No such file or directory", 1
            elif self.fs[n] is None and not recursive:
                err, rc = f"rm: cannot remove '{p}': Is a directory", 1
            else:
                for k in [k for k in self.fs if k == n or k.startswith(n + "/")]:
                    del self.fs[k]
                    self.fs_mtime.pop(k, None)
        return "", err, rc

    def _sh_echo(self, rest):
        return " ".join(rest) + "\n", "", 0

    # state ---------------------------------------------------------------
    @abc.abstractmethod
    def port_config(self):
        """{port: {"mtu", "speed_gbps", "pfc", "trust", "ecn"}} derived from the running config."""

    # buffer model --------------------------------------------------------
    def lossless_headroom(self, port, cfg):
        """Hook: the priorities of ``port`` whose ingress priority group has lossless headroom, from the
        platform's own config. Default (EOS, NVUE): the switch reserves headroom for every no-drop
        priority it has PFC on (EOS ``priority-flow-control priority <p> no-drop``; NVUE's lossless
        pool for the PFC priorities); SONiC overrides it (its BUFFER_PG lossless profiles)."""
        return list(cfg.get("pfc") or [])

    def pfc_watchdog(self, port, cfg):
        """Hook: the priorities of ``port`` the PFC watchdog guards (default: none modelled)."""
        return []

    def buffer_state(self, port, cfg):
        """{"headroom": [prio], "pfcwd": [prio]} of one port, with the lab's buffer faults applied:
        a port without headroom on a priority is lossy there whatever PFC says (congestion.py)."""
        head = [] if port in self.no_headroom else sorted(self.lossless_headroom(port, cfg))
        wd = [] if self.pfcwd_disabled else sorted(self.pfc_watchdog(port, cfg))
        return {"headroom": head, "pfcwd": wd}

    def fault_headroom_zero(self, port):
        """The port's buffer carving leaves no headroom (default: operational state only; SONiC
        changes its BUFFER_PG, the drift an operator would see)."""
        self.no_headroom.add(port)
        self.store.publish(self)

    def fault_headroom_restore(self, port):
        self.no_headroom.discard(port)
        self.store.publish(self)

    def fault_pfcwd_off(self):
        self.pfcwd_disabled = True
        self.store.publish(self)

    def fault_pfcwd_restore(self):
        self.pfcwd_disabled = False
        self.store.publish(self)

    def port_oper_up(self, port, admin_up=True):
        if port in self.link_down or not admin_up:
            return False
        peer = self.spec.get("ports", {}).get(port, {}).get("peer", "")
        return self.store.peer_cable_up(peer)

    # LLDP ----------------------------------------------------------------
    def lldp_neighbors(self):
        """[(port, neighbour)] this switch's LLDP agent has learnt, from the live model's cabling.

        A port whose cable is pulled (node side) or whose link is down shows
        nothing. A host's lldpd sends its host name as system name, the
        netdev's MAC as port ID and the netdev's name as port description
        (lldpd's default when the interface has no alias); a switch sends
        its name and the port's name. ``lab fault cable-swap`` changes the
        model's ``peer`` of two ports, so the table follows the cables.
        """
        try:
            m = model.load()
        except model.ModelMissing:
            return []
        ports = (m.get("switches", {}).get(self.name) or {}).get("ports") or self.spec.get("ports", {})
        out = []
        for port in sorted(ports, key=natural_key):
            peer = (ports[port] or {}).get("peer") or ""
            if ":" not in peer or port in self.link_down:
                continue
            name, rport = peer.split(":", 1)
            node = m.get("nodes", {}).get(name)
            if node is not None:
                nic = next((n for n in node.get("nics", []) if n.get("device") == rport), None)
                if nic is None or nic.get("cable", "up") == "down":
                    continue
                out.append(
                    (
                        port,
                        {
                            "system_name": name,
                            "chassis_id": (node.get("nics") or [nic])[0].get("mac"),
                            "port_id": nic.get("mac"),
                            "port_id_type": "mac",
                            "port_descr": nic.get("netdev"),
                        },
                    )
                )
            elif name in m.get("switches", {}):
                out.append((port, {"system_name": name, "chassis_id": switch_mac(name), "port_id": rport, "port_id_type": "ifname", "port_descr": rport}))
        return out

    # faults --------------------------------------------------------------
    @abc.abstractmethod
    def fault_pfc_off(self, port):
        """Platform-specific."""


def switch_mac(name):
    """A stable base MAC for a simulated switch (locally administered)."""
    h = sum((i + 1) * ord(c) for i, c in enumerate(name)) & 0xFFFFFF
    return "02:1c:73:%02x:%02x:%02x" % (h >> 16, (h >> 8) & 0xFF, h & 0xFF)


def data_dir(state_dir):
    """Where the simulators keep their own files (host key, credentials, configs).

    ``LINERATE_SWITCHSIM_DIR`` puts them apart from the fabric model, whose
    directory is mounted into every node: switch secrets stay off the nodes.
    """
    return os.environ.get("LINERATE_SWITCHSIM_DIR") or os.path.join(state_dir, "switchsim")


class Store:
    """Per-switch state files under data_dir(state), and the model bridge."""

    def __init__(self, state_dir):
        self.state_dir = state_dir
        self.dir = data_dir(state_dir)
        os.makedirs(self.dir, exist_ok=True)
        os.environ["LINERATE_LAB_STATE"] = state_dir

    def path(self, name):
        return os.path.join(self.dir, f"{name}.json")

    def load(self, sw):
        p = self.path(sw.name)
        if os.path.exists(p):
            with open(p, encoding="utf-8") as f:
                data = json.load(f)
            sw.fs = data.pop("_fs", {})  # the shell's files (the window lock) outlive a restart
            sw.fs_mtime = data.pop("_fs_mtime", {})
            sw.clock_skew_s = data.pop("_clock_skew_s", 0)
            sw.from_json(data)
        else:
            sw.factory()
            self.save(sw)

    def save(self, sw):
        p = self.path(sw.name)
        tmp = p + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(
                dict(sw.to_json(), _fs=getattr(sw, "fs", {}), _fs_mtime=getattr(sw, "fs_mtime", {}), _clock_skew_s=getattr(sw, "clock_skew_s", 0)),
                f,
                indent=1,
                sort_keys=True,
            )
        os.replace(tmp, p)

    def publish(self, sw):
        cfg = sw.port_config()
        for p, st in cfg.items():
            st.update(sw.buffer_state(p, st))
        # oper state reads the model (peer cables): before taking the write lock
        ups = {p: sw.port_oper_up(p, st.get("admin_up", True)) for p, st in cfg.items()}
        with model.locked() as m:
            ports = m.setdefault("switches", {}).setdefault(sw.name, {}).setdefault("ports", {})
            for p, st in cfg.items():
                entry = ports.setdefault(p, {})
                entry.update(st)
                entry["up"] = ups[p]
                entry.pop("admin_up", None)

    def peer_cable_up(self, peer):
        """A node NIC's cable state from the model (lab/fault may pull it)."""
        if ":" not in (peer or ""):
            return True
        node, dev = peer.split(":", 1)
        try:
            m = model.load()
        except model.ModelMissing:
            return True
        n = m.get("nodes", {}).get(node)
        if not n:
            return True
        for nic in n.get("nics", []):
            if nic.get("device") == dev:
                return nic.get("cable", "up") != "down"
        return True


def kb(value):
    """'150KB' / '1.5MB' / '153600' (bytes) -> KB (int)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(B|KB|MB)?", str(value).strip(), re.I)
    if not m:
        raise ValueError(value)
    n = float(m.group(1))
    unit = (m.group(2) or "B").upper()
    return int(round(n / 1024 if unit == "B" else n * 1024 if unit == "MB" else n))


# SONiC's CLI prints its usage as click does and its tables as tabulate's "simple" format (sonic-utilities)
def click_usage(cmd, args_usage):
    return f'Usage: {cmd} [OPTIONS] {args_usage}\nTry "{cmd} -h" for help.\n'


def tabulate(head, rows, right=()):
    widths = [max([len(h)] + [len(str(r[i])) for r in rows]) for i, h in enumerate(head)]

    def fmt(cells):
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([fmt(head), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows])
