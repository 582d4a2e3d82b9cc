"""One asyncssh server per simulated switch, all in one process and loop.

Each switch listens on its own loopback address (model
``switches.<name>.address/port``). Sessions get a PTY-like character loop:
typed characters are echoed, a line runs on CR or LF, output lines end in
CRLF, EOS pages long output with ``--More--`` until ``terminal length 0``.
Password and public-key authentication; one persisted ed25519 host key.
"""

import asyncio
import glob
import json
import logging
import os
import re

import asyncssh

from simcore import FAULT_KINDS, Drop, Exit, Hang, Store
from sim_eos import Eos
from sim_nvue import Nvue
from sim_sonic import Sonic

PLATFORMS = {"nvue": Nvue, "sonic": Sonic, "eos": Eos}
log = logging.getLogger("switchsim")


class CliSession(asyncssh.SSHServerSession):
    def __init__(self, sw, username):
        self.sw = sw
        self.ctx = sw.new_context(username)
        self.buf = ""
        self.skip_lf = False
        self.more = None  # remaining lines while paging
        self.exec_cmd = None
        self.chan = None
        self.hung = False  # fault: this session no longer answers

    def connection_made(self, chan):
        self.chan = chan

    def pty_requested(self, term_type, term_size, term_modes):
        return True

    def shell_requested(self):
        return True

    def exec_requested(self, command):
        self.exec_cmd = command
        return True

    def session_started(self):
        if self.exec_cmd is not None:
            try:
                out = self.sw.execute(self.ctx, self.exec_cmd)
            except Exit:
                out = ""
            if isinstance(out, tuple):
                out = out[0]
            if out:
                self.chan.write(out.replace("\n", "\r\n") + "\r\n")
            self.chan.exit(0)
            return
        self.chan.write(self.sw.banner(self.ctx).replace("\n", "\r\n") + self.sw.prompt(self.ctx))

    def data_received(self, data, datatype):
        if self.hung:
            return
        for ch in data:
            if self.more is not None:
                self._page(ch)
                continue
            if ch == "\n" and self.skip_lf:
                self.skip_lf = False
                continue
            self.skip_lf = ch == "\r"
            if ch in "\r\n":
                line, self.buf = self.buf, ""
                self.chan.write("\r\n")
                self._run(line)
                if self.hung or self.chan is None:
                    return
            elif ch == "\x03":
                self.buf = ""
                self.chan.write("^C\r\n" + self.sw.prompt(self.ctx))
            elif ch in "\x7f\x08":
                if self.buf:
                    self.buf = self.buf[:-1]
                    self.chan.write("\b \b")
            elif ch == "\x04" and not self.buf:
                self.chan.exit(0)
                return
            elif ch >= " " or ch == "\t":
                self.buf += ch
                self.chan.write(ch)

    def _run(self, line):
        if self.hung:
            return
        try:
            out = self.sw.run_line(self.ctx, line)
        except Exit:
            self.chan.exit(0)
            return
        except Drop:
            log.info("%s: fault: dropping the session at %r", self.sw.name, line)
            self.chan.get_extra_info("connection").abort()
            self.hung = True  # nothing more is read or written on this session
            return
        except Hang:
            log.info("%s: fault: no answer from %r on", self.sw.name, line)
            self.hung = True
            return
        except Exception as exc:  # a simulator bug must not kill the server
            log.exception("%s: command %r failed", self.sw.name, line)
            out = f"% Internal error: {exc}"
        if isinstance(out, tuple):  # a question: no newline, no prompt
            self.chan.write(out[0])
            return
        lines = out.split("\n") if out else []
        n = self.ctx.get("term_length", 0)
        if n and len(lines) > n:
            self.chan.write("\r\n".join(lines[: n - 1]) + "\r\n --More-- ")
            self.more = lines[n - 1 :]
            return
        self._finish(lines)

    def _finish(self, lines):
        text = "\r\n".join(lines) + ("\r\n" if lines else "")
        self.chan.write(text + self.sw.prompt(self.ctx))

    def _page(self, ch):
        n = self.ctx.get("term_length", 24)
        self.chan.write("\r          \r")
        if ch in "qQ":
            self.more = None
            self.chan.write(self.sw.prompt(self.ctx))
            return
        step = 1 if ch in "\r\n" else n - 1
        chunk, rest = self.more[:step], self.more[step:]
        if not rest:
            self.more = None
            self._finish(chunk)
            return
        self.more = rest
        self.chan.write("\r\n".join(chunk) + "\r\n --More-- ")

    def eof_received(self):
        return False

    def break_received(self, msec):
        return False


class SwitchServer(asyncssh.SSHServer):
    def __init__(self, sw, creds, authorized_keys):
        self.sw = sw
        self.creds = creds
        self.authorized_keys = authorized_keys
        self.username = None

    def begin_auth(self, username):
        self.username = username
        if self.authorized_keys and username == self.creds["username"]:
            self._conn.set_authorized_keys(self.authorized_keys)
        return True

    def connection_made(self, conn):
        self._conn = conn

    def password_auth_supported(self):
        return True

    def validate_password(self, username, password):
        return username == self.creds["username"] and password == self.creds["password"]

    def public_key_auth_supported(self):
        return bool(self.authorized_keys)

    def kbdint_auth_supported(self):
        return False

    def session_requested(self):
        return CliSession(self.sw, self.username)


class Simulator:
    def __init__(self, state_dir, names=None, port_override=None, credentials=None):
        self.store = Store(state_dir)
        self.state_dir = state_dir
        self.names = names
        self.port_override = port_override
        self.creds = credentials
        self.switches = {}
        self.servers = []

    def host_key(self):
        path = os.path.join(self.store.dir, "ssh_host_ed25519_key")
        if not os.path.exists(path):
            key = asyncssh.generate_private_key("ssh-ed25519")
            key.write_private_key(path)
            os.chmod(path, 0o600)
        return asyncssh.read_private_key(path)

    async def start(self):
        from simcore import model

        m = model.load()
        key = self.host_key()
        pub = key.export_public_key("openssh").decode().split()
        ak_path = os.path.join(self.store.dir, "authorized_keys")
        authorized = asyncssh.read_authorized_keys(ak_path) if os.path.exists(ak_path) else None
        loop = asyncio.get_running_loop()
        known = []
        for name, spec in sorted(m.get("switches", {}).items()):
            if self.names and name not in self.names:
                continue
            cls = PLATFORMS.get(spec.get("platform"))
            if cls is None:
                raise SystemExit(f"switch {name}: unknown platform {spec.get('platform')!r}")
            sw = cls(name, spec, self.store)
            sw.loop = loop
            self.store.load(sw)
            self.switches[name] = sw
            addr = spec["address"]
            port = int(self.port_override or spec.get("port", 22))
            if not addr.startswith("127."):
                raise SystemExit(f"switch {name}: {addr} is not a loopback address; refusing to listen")
            try:
                srv = await asyncssh.create_server(
                    lambda sw=sw: SwitchServer(sw, self.creds, authorized),
                    addr,
                    port,
                    server_host_keys=[key],
                    reuse_address=True,
                    line_editor=False,
                    keepalive_interval=0,
                    login_timeout=30,
                )
            except OSError as exc:
                raise SystemExit(f"switch {name}: cannot listen on {addr}:{port}: {exc.strerror} (pick another port in the model, or run.py --port)") from None
            self.servers.append(srv)
            self.store.publish(sw)
            known.append(f"[{addr}]:{port} {pub[0]} {pub[1]}" if port != 22 else f"{addr} {pub[0]} {pub[1]}")
            log.info("%s (%s) listening on %s:%s", name, spec["platform"], addr, port)
        with open(os.path.join(self.store.dir, "known_hosts"), "w", encoding="utf-8") as f:
            f.write("\n".join(known) + "\n")
        loop.create_task(self.watch_faults())

    async def watch_faults(self):
        d = os.path.join(self.store.dir, "faults")
        os.makedirs(d, exist_ok=True)
        while True:
            for path in sorted(glob.glob(os.path.join(d, "*.json"))):
                try:
                    with open(path, encoding="utf-8") as f:
                        text = f.read()
                except FileNotFoundError:  # withdrawn by fault.py after its wait ended
                    continue
                try:
                    result = self.apply_fault(json.loads(text))
                except Exception as exc:  # report, never die
                    result = {"ok": False, "error": str(exc)}
                # the answer appears whole (fault.py reads it as soon as it exists), then the request goes
                tmp = path[:-5] + ".done.tmp"
                with open(tmp, "w", encoding="utf-8") as f:
                    json.dump(result, f)
                os.replace(tmp, path[:-5] + ".done")
                try:
                    os.remove(path)
                except FileNotFoundError:
                    pass
            await asyncio.sleep(0.2)

    def apply_fault(self, req):
        sw = self.switches.get(req.get("switch"))
        if sw is None:
            return {"ok": False, "error": f"switch {req.get('switch')!r} is not served here"}
        action = req.get("action")
        port = req.get("port")
        if action in ("pfc_off", "link_down", "link_up", "headroom_zero", "headroom_restore") and port not in sw.ports:
            return {"ok": False, "error": f"{sw.name} has no fabric port {port!r}"}
        if action == "pfc_off":
            sw.fault_pfc_off(port)
        elif action in ("headroom_zero", "headroom_restore"):  # the buffer model (simcore.py)
            getattr(sw, "fault_" + action)(port)
        elif action in ("pfcwd_off", "pfcwd_restore"):
            getattr(sw, "fault_" + action)()
        elif action == "link_down":
            sw.link_down.add(port)
            self.store.publish(sw)
        elif action == "link_up":
            sw.link_down.discard(port)
            self.store.publish(sw)
        elif action in FAULT_KINDS:
            try:
                re.compile(req["match"])
            except (KeyError, re.error) as exc:
                return {"ok": False, "error": f"{action} needs a valid REGEX: {exc}"}
            sw.rejects.append({"kind": action, "match": req["match"], "count": int(req.get("count", 1)), "skip": int(req.get("skip", 0))})
        elif action == "clock_skew":  # the switch's clock runs this many seconds ahead (no NTP)
            try:
                sw.clock_skew_s = int(req["seconds"])
            except (KeyError, TypeError, ValueError) as exc:
                return {"ok": False, "error": f"clock_skew needs whole SECONDS: {exc}"}
            self.store.save(sw)
        elif action == "armed":  # a read: the session faults still waiting for their command
            return {"ok": True, "armed": [dict(r) for r in sw.rejects if r["count"] > 0]}
        elif action == "clear":
            sw.link_down.clear()
            sw.rejects.clear()
            sw.clock_skew_s = 0
            self.store.publish(sw)
        else:
            return {"ok": False, "error": f"unknown action {action!r}"}
        return {"ok": True}

    def close(self):
        for s in self.servers:
            s.close()
