"""SONiC simulator: the admin bash shell with sonic-utilities' show/config.

State is CONFIG_DB (running) plus the saved /etc/sonic/config_db.json and
the generic config updater's checkpoints. Grammar: show runningconfiguration
all | interfaces status | interfaces counters [fec-stats] | pfc priority [port] | ecn; sudo config interface
mtu|speed <port> <v>; sudo config interface pfc priority <port> <p> on|off;
sudo config save -y; sudo config checkpoint|rollback|delete-checkpoint <name>;
sudo config list-checkpoints; sudo sonic-db-cli CONFIG_DB hset|hdel|hgetall;
cat /etc/sonic/config_db.json; the shell subset of simcore (mkdir, cat, echo >,
rm -rf: the change window's lock); systemd's transient timers as the change
window's dead-man timer uses them: sudo systemd-run --unit=U --on-active=T
<command> (a config command, or /bin/sh -c 'config ... && config ...'), sudo systemctl stop U.timer, systemctl show -p SubState --value
U.timer (waiting until it elapses, then elapsed; dead once stopped or unknown).
A timer fires when its time has come - on the server's event loop, or at the
next command in-process - runs its command (sonic-utilities' config as root)
and survives a simulator restart (a restart after its deadline fires it).

YANG: config checkpoint refuses a running config, and config rollback a
checkpoint, that fails the constraints in sonic_yang_constraints.json
(sonic_yang.py), as generic_config_updater does with libyang; sonic-db-cli
writes anything, as redis does.
"""

import copy
import json
import re
import shlex
import time

import sim_ber
import sim_optics
import sonic_yang
from sim_sonic_lossless import BUFFER_DEFAULTS, SonicLossless
from sim_sonic_show import SonicShow, dump
from simcore import Exit, Platform, bash_words, click_usage, kb

SPEEDS = ("1000", "10000", "25000", "40000", "50000", "100000", "200000", "400000", "800000")

# a switch spec without "hwsku" (fabric.json) is a Spectrum-4 SN5600 in its default SKU
DEFAULT_HWSKU = "ACS-SN5600"


class Sonic(SonicShow, SonicLossless, Platform):
    platform = "sonic"

    def factory(self):
        # the SKU and buffer model of fabric.json's switch ("hwsku", "buffer_model": traditional | dynamic)
        hwsku = self.spec.get("hwsku", DEFAULT_HWSKU)
        model = self.spec.get("buffer_model", "traditional")
        db = {
            "DEVICE_METADATA": {
                "localhost": {
                    "hostname": self.name,
                    "hwsku": hwsku,
                    "platform": BUFFER_DEFAULTS.get(hwsku, {}).get("platform", "x86_64-kvm"),
                    "type": "LeafRouter",
                    "mac": "1c:34:da:00:00:02",
                    "buffer_model": model,
                }
            },
            "PORT": {},
            # the pools SONiC's buffer templates create (buffers_defaults_*.j2: a lossless ingress pool)
            "BUFFER_POOL": {"ingress_lossless_pool": {"mode": "dynamic", "type": "ingress"}, "egress_lossless_pool": {"mode": "static", "type": "egress"}},
            "DSCP_TO_TC_MAP": {"AZURE": {str(d): "0" for d in range(0, 64, 8)}},
            "WRED_PROFILE": {
                "AZURE_LOSSLESS": {
                    "ecn": "ecn_all",
                    "green_max_threshold": "2097152",
                    "green_min_threshold": "1048576",
                    "green_drop_probability": "5",
                    "wred_green_enable": "true",
                }
            },
        }
        for i, p in enumerate(self.ports):
            spec = self.spec["ports"][p]
            n = int(re.sub(r"\D", "", p))
            db["PORT"][p] = {
                "admin_status": "up",
                "alias": f"etp{i + 1}",
                "index": str(i + 1),
                "lanes": ",".join(str(n + j) for j in range(8)),
                "mtu": "9100",
                "speed": str(spec.get("speed_gbps", 400) * 1000),
                "fec": "rs",
                "description": spec.get("peer", ""),
            }
        if model == "dynamic":  # what buffers_config.j2 adds in the dynamic model (sonic-buildimage files/build_templates)
            db["DEFAULT_LOSSLESS_BUFFER_PARAMETER"] = {"AZURE": {"default_dynamic_th": "0"}}
            db["LOSSLESS_TRAFFIC_PATTERN"] = {"AZURE": {"mtu": "1024", "small_packet_percentage": "50"}}
        self.db = db
        self.saved = copy.deepcopy(db)
        self.checkpoints = {}
        self.timers = {}

    def to_json(self):
        return {"db": self.db, "saved": self.saved, "checkpoints": self.checkpoints, "timers": getattr(self, "timers", {})}

    def from_json(self, d):
        self.db, self.saved, self.checkpoints = d["db"], d["saved"], d["checkpoints"]
        # state saved before the simulator was a SKU of the buffer table (an invented hwsku): the switch's
        # hardware is fabric.json's, in the running, saved and checkpointed configs alike
        for db in [self.db, self.saved] + list(self.checkpoints.values()):
            md = db.get("DEVICE_METADATA", {}).get("localhost") if isinstance(db, dict) else None
            if md is not None and md.get("hwsku") not in BUFFER_DEFAULTS:
                md["hwsku"] = self.spec.get("hwsku", DEFAULT_HWSKU)
        self.timers = d.get("timers", {})
        self._handles = {}
        for unit in list(self.timers):  # the simulator restarted: due timers fire, the others are re-armed
            self._arm(unit)

    # ------------------------------------------------------------ systemd transient timers
    # systemd-run(1): "--on-active=" creates a transient .timer and .service; the unit name from --unit;
    # systemctl stop unloads a transient unit; an elapsed timer stays loaded (RemainAfterElapse=yes).
    TIMESPAN = re.compile(r"(\d+)(s|sec|m|min|h)?")

    def _arm(self, unit):
        t = self.timers[unit]
        if t["state"] != "waiting":
            return
        left = t["deadline"] - time.time()
        if left <= 0:
            self._fire(unit)
        elif self.loop:
            self._handles = getattr(self, "_handles", {})
            self._handles[unit] = self.loop.call_later(left, self._fire, unit)

    def fire_due_timers(self, now=None):
        now = time.time() if now is None else now
        for unit, t in list(getattr(self, "timers", {}).items()):
            if t["state"] == "waiting" and t["deadline"] <= now:
                self._fire(unit)

    def _fire(self, unit):
        t = self.timers.get(unit)
        if not t or t["state"] != "waiting":
            return
        t["state"] = "elapsed"
        argv = t["command"]
        if argv[0] in self.SH and argv[1:2] == ["-c"]:
            # /bin/sh -c 'config A && config B': each config command in turn, && stops at a failed one
            results = []
            for part in argv[2].split("&&"):
                words = shlex.split(part)
                out = self.config(words[1:]) if words and words[0] in self.CONFIG else f"sh: {part}: not found"
                results.append(out)
                if re.search(r"^(Error|Usage:|sh: )|^Config Rollback: .*failed", out or "", re.M):
                    break
            t["result"] = "\n".join(results)
        else:
            t["result"] = self.config(argv[1:]) if argv[0] in self.CONFIG else ""
        self.store.save(self)

    CONFIG = ("config", "/usr/local/bin/config")
    SH = ("sh", "/bin/sh")

    def systemd(self, cmd, args, sudo):
        if cmd == "systemd-run":
            unit, active, i = None, None, 0
            while i < len(args) and args[i].startswith("-"):
                opt, _, val = args[i].partition("=")
                if opt in ("--unit", "-u", "--on-active") and not val and i + 1 < len(args):
                    val, i = args[i + 1], i + 1
                if opt in ("--unit", "-u"):
                    unit = val
                elif opt == "--on-active":
                    active = val
                else:
                    return f"systemd-run: unrecognized option '{args[i]}'"
                i += 1
            command = args[i:]
            if active is None or not command:
                return "systemd-run: this simulator runs transient timers only (--on-active= and a command)"
            m = self.TIMESPAN.fullmatch(active)
            if not m:
                return f"Failed to parse timer value: {active}"
            secs = int(m.group(1)) * {"m": 60, "min": 60, "h": 3600}.get(m.group(2), 1)
            if not sudo:
                return "Failed to start transient timer unit: Interactive authentication required."
            if command[0] in self.SH and (
                command[1:2] != ["-c"]
                or len(command) != 3
                or any(not shlex.split(part) or shlex.split(part)[0] not in self.CONFIG for part in command[2].split("&&"))
            ):
                return f"sh: this simulator's timers run config commands only: {' '.join(command[1:])}"
            if command[0] not in self.CONFIG + self.SH:
                return f"Failed to find executable {command[0]}: No such file or directory"
            unit = (unit or f"run-r{len(self.timers) + 1}").removesuffix(".service").removesuffix(".timer")
            if unit in self.timers:
                return f"Failed to start transient timer unit: Unit {unit}.timer already exists."
            self.timers[unit] = {"command": command, "deadline": time.time() + secs, "state": "waiting"}
            self.store.save(self)
            self._arm(unit)
            return f"Running timer as unit: {unit}.timer\nWill run service as unit: {unit}.service"
        # systemctl
        if args[:1] == ["stop"] and len(args) == 2:
            name = args[1]
            unit = name.removesuffix(".timer")
            if not sudo:
                return f"Failed to stop {name}: Interactive authentication required.\nSee system logs and 'systemctl status {name}' for details."
            if not name.endswith(".timer") or unit not in self.timers:
                return f"Failed to stop {name}: Unit {name} not loaded."
            h = getattr(self, "_handles", {}).pop(unit, None)
            if h:
                h.cancel()
            del self.timers[unit]  # a stopped transient unit is unloaded
            self.store.save(self)
            return ""
        if args[:4] == ["show", "-p", "SubState", "--value"] and len(args) == 5:
            t = self.timers.get(args[4].removesuffix(".timer")) if args[4].endswith(".timer") else None
            return t["state"] if t else "dead"
        return f"Unknown command verb {(args or [''])[0]}." if args else "Too few arguments."

    def prompt(self, ctx):
        return f"{ctx['user']}@{self.name}:~$ "

    def banner(self, ctx):
        return (
            "Linux sonic 6.1.0-22-2-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.94-1 x86_64\n"
            "You are on\n  ____   ___  _   _ _  ____\n / ___| / _ \\| \\ | (_)/ ___|\n"
            " \\___ \\| | | |  \\| | | |\n  ___) | |_| | |\\  | | |___\n |____/ \\___/|_| \\_|_|\\____|\n\n"
            "-- Software for Open Networking in the Cloud --\n\n"
        )

    # ------------------------------------------------------------ CLI
    def execute(self, ctx, line):
        self.fire_due_timers()  # in-process (no event loop): time has passed between two commands
        line = line.strip()
        argv, answer = bash_words(line)
        if argv is None:
            return answer
        sudo = False
        if argv[0] == "sudo":
            sudo, argv = True, argv[1:]
            if not argv:
                return "usage: sudo -h | -K | -k | -V"
        cmd = argv[0]
        if cmd in ("exit", "logout"):
            raise Exit()
        if cmd in self.SHELL_COMMANDS and argv[1:] != ["/etc/sonic/config_db.json"]:
            return self.shell(line)[0]
        if cmd in ("systemd-run", "systemctl"):
            return self.systemd(cmd, argv[1:], sudo)
        if cmd in ("show", "cat") and self.check_reject(line):
            # a read that fails: the redis CONFIG_DB does not answer
            return "Error: Unable to connect to redis: Timeout connecting to server (CONFIG_DB)"
        if cmd == "cat":
            if argv[1:] == ["/etc/sonic/config_db.json"]:
                return dump(self.saved)
            return f"cat: {' '.join(argv[1:])}: No such file or directory"
        if cmd == "hostname":
            return self.name
        if cmd == "show":
            return self.show(argv[1:])
        if cmd in ("config", "sonic-db-cli"):
            if not sudo:
                return "Root privileges are required for this operation"
            if self.check_reject(line):
                return f"Error: Failed to apply '{' '.join(argv)}': operation rejected by the switch"
            if cmd == "config":
                return self.config(argv[1:])
            return self.dbcli(argv[1:])
        return f"-bash: {cmd}: command not found"

    def release(self):
        """The sonic-utilities release branch this switch runs (topology ``sonic_release``; default the newest
        the simulator knows, sim_ber.SONIC_RELEASES)."""
        release = str(self.spec.get("sonic_release") or sim_ber.SONIC_DEFAULT_RELEASE)
        if release not in sim_ber.SONIC_RELEASES:
            raise ValueError(f"sonic release {release!r}: not one of {', '.join(sim_ber.SONIC_RELEASES)}")
        return release

    def optic(self, port):
        """The optical module in ``port`` (sim_optics: healthy, or the model's override; None: empty cage)."""
        speed = int(self.db["PORT"].get(port, {}).get("speed", "400000")) // 1000
        return sim_optics.module(self.name, port, speed, bool(self.spec.get("ports", {}).get(port, {}).get("peer")))

    def config(self, args):
        if not args:
            return click_usage("config", "COMMAND [ARGS]...")
        sub = args[0]
        if sub == "interface":
            return self.config_interface(args[1:])
        if sub == "pfcwd":
            return self.config_pfcwd(args[1:])
        if sub == "save":
            if "-y" not in args:
                return "Existing files will be overwritten, continue? [y/N]: \nAborted!"
            self.saved = copy.deepcopy(self.db)
            self.store.save(self)
            return "Running command: /usr/local/bin/sonic-cfggen -d --print-data > /etc/sonic/config_db.json"
        if sub == "checkpoint" and len(args) == 2:
            # generic_config_updater ConfigRollbacker.checkpoint: the running config must pass YANG
            # validation (sonic_yang.py) before it is saved as a checkpoint
            if sonic_yang.validate(self.db):
                return (
                    f"Config Rollback: Config checkpoint starting.\nCheckpoint name: {args[1]}.\n"
                    "Getting current config db.\n"
                    "Config Rollback: Config checkpoint failed due to Running configs on the device are not valid.\n"
                    + click_usage("config checkpoint", "CHECKPOINT_NAME")
                    + "\nError: Running configs on the device are not valid."
                )
            self.checkpoints[args[1]] = copy.deepcopy(self.db)
            self.store.save(self)
            return (
                f"Config Rollback: Config checkpoint starting.\nCheckpoint name: {args[1]}.\n"
                "Getting current config db.\nGetting checkpoint full-path.\nEnsuring checkpoint directory exist.\n"
                f"Saving config db content to /etc/sonic/checkpoints/{args[1]}.cp.json.\n"
                "Checkpoint created successfully.\n"
            )
        if sub == "rollback" and len(args) == 2:
            if args[1] not in self.checkpoints:
                return f"Error: Checkpoint '{args[1]}' does not exist."
            # ConfigReplacer.replace: the checkpoint (the target) must pass YANG validation
            if sonic_yang.validate(self.checkpoints[args[1]]):
                return (
                    f"Config Rollback: Config rollback starting.\nCheckpoint name: {args[1]}.\n"
                    f"Verifying '{args[1]}' exists.\nLoading checkpoint into memory.\n"
                    "Replacing config using 'Config Replacer'.\n"
                    "Config Rollback: Config rollback failed due to The given target config is not valid\n"
                    + click_usage("config rollback", "CHECKPOINT_NAME")
                    + "\nError: The given target config is not valid"
                )
            self.db = copy.deepcopy(self.checkpoints[args[1]])
            self.changed()
            return (
                f"Config Rollback: Config rollback starting.\nCheckpoint name: {args[1]}.\n"
                f"Verifying '{args[1]}' exists.\nLoading checkpoint into memory.\n"
                "Replacing config using 'Config Replacer'.\nConfig rollback completed successfully.\n"
            )
        if sub == "list-checkpoints":
            return json.dumps(sorted(self.checkpoints), indent=4)
        if sub == "delete-checkpoint" and len(args) == 2:
            if args[1] not in self.checkpoints:
                return f"Error: Checkpoint '{args[1]}' does not exist."
            del self.checkpoints[args[1]]
            self.store.save(self)
            return f"Deleting checkpoint: {args[1]}\nCheckpoint deleted successfully."
        if sub in ("checkpoint", "rollback", "delete-checkpoint"):
            return click_usage(f"config {sub}", "CHECKPOINT_NAME") + '\nError: Missing argument "CHECKPOINT_NAME".'
        return click_usage("config", "COMMAND [ARGS]...") + f'\nError: No such command "{sub}".'

    def _port(self, name):
        return name in self.db["PORT"]

    def config_interface(self, args):
        if not args:
            return click_usage("config interface", "COMMAND [ARGS]...")
        sub = args[0]
        if sub == "mtu":
            if len(args) != 3:
                return click_usage("config interface mtu", "<interface_name> <interface_mtu>") + '\nError: Missing argument "<interface_mtu>".'
            port, mtu = args[1], args[2]
            if not self._port(port):
                return "Error: Interface name is invalid. Please enter a valid interface name!!"
            if not mtu.isdigit() or not 68 <= int(mtu) <= 9216:
                return (
                    click_usage("config interface mtu", "<interface_name> <interface_mtu>")
                    + f'\nError: Invalid value for "<interface_mtu>": {mtu} is not in the valid range of 68 to 9216.'
                )
            self.db["PORT"][port]["mtu"] = mtu
            self.changed()
            return ""
        if sub == "speed":
            if len(args) != 3:
                return click_usage("config interface speed", "<interface_name> <interface_speed>") + '\nError: Missing argument "<interface_speed>".'
            port, speed = args[1], args[2]
            if not self._port(port):
                return "Error: Interface name is invalid. Please enter a valid interface name!!"
            if speed not in SPEEDS:
                return f"Invalid speed specified: {speed}\nValid speeds:{','.join(SPEEDS)}\nError: Invalid speed {speed}"
            self.db["PORT"][port]["speed"] = speed
            self.changed()
            return ""
        if sub == "pfc" and args[1:2] == ["priority"]:
            a = args[2:]
            if len(a) != 3 or a[2] not in ("on", "off"):
                return click_usage("config interface pfc priority", "<interface_name> <priority> <status>") + '\nError: Missing argument "<status>".'
            port, prio, status = a
            if not self._port(port):
                return f"Cannot find interface {port}"
            if not re.fullmatch(r"[0-7]", prio):
                return f'Error: Invalid value for "<priority>": invalid choice: {prio}. (choose from 0, 1, 2, 3, 4, 5, 6, 7)'
            qm = self.db.setdefault("PORT_QOS_MAP", {}).setdefault(port, {})
            cur = {int(x) for x in qm.get("pfc_enable", "").split(",") if x}
            if status == "on":
                if int(prio) in cur:
                    return f"Priority {prio} has already been enabled on {port}"
                cur.add(int(prio))
            else:
                if int(prio) not in cur:
                    return f"Priority {prio} is not enabled on {port}"
                cur.discard(int(prio))
            if cur:
                qm["pfc_enable"] = ",".join(map(str, sorted(cur)))
            else:
                qm.pop("pfc_enable", None)
                if not qm:
                    del self.db["PORT_QOS_MAP"][port]
                    if not self.db["PORT_QOS_MAP"]:
                        del self.db["PORT_QOS_MAP"]
            self.changed()
            return ""
        return click_usage("config interface", "COMMAND [ARGS]...") + f'\nError: No such command "{sub}".'

    def dbcli(self, args):
        if args[:1] == ["APPL_DB"]:
            return self.appl_db(args[1:])
        if not args or args[0] != "CONFIG_DB":
            return "Usage: sonic-db-cli [-h] [-s] [-n NAMESPACE] db_or_op [cmd ...]\nError: only CONFIG_DB is served"
        op = args[1].lower() if len(args) > 1 else ""
        if op not in ("hset", "hdel", "hgetall", "hget") or len(args) < 3:
            return f"(error) ERR unknown command '{op}'"
        table, _, key = args[2].partition("|")
        if not key:
            return "(error) ERR key must be TABLE|key"
        if op == "hgetall":
            return json.dumps(self.db.get(table, {}).get(key, {}))
        if op == "hget":
            return self.db.get(table, {}).get(key, {}).get(args[3], "") if len(args) > 3 else "(error) ERR wrong number of arguments for 'hget' command"
        if op == "hset":
            pairs = args[3:]
            if not pairs or len(pairs) % 2:
                return "(error) ERR wrong number of arguments for 'hset' command"
            ent = self.db.setdefault(table, {}).setdefault(key, {})
            new = 0
            for f, v in zip(pairs[::2], pairs[1::2]):
                new += f not in ent
                ent[f] = v
            self.changed()
            return str(new)
        # hdel
        ent = self.db.get(table, {}).get(key)
        n = 0
        if ent is not None:
            for f in args[3:]:
                if f in ent:
                    del ent[f]
                    n += 1
            if not ent:
                del self.db[table][key]
                if not self.db[table]:
                    del self.db[table]
        self.changed()
        return str(n)

    def port_config(self):
        res = {}
        qmap = self.db.get("PORT_QOS_MAP", {})
        for p in self.ports:
            e = self.db["PORT"].get(p, {})
            qm = qmap.get(p, {})
            pfc = sorted(int(x) for x in qm.get("pfc_enable", "").split(",") if x)
            ecn = {"enabled": False}
            for k, qv in sorted(self.db.get("QUEUE", {}).items()):
                port, _, qid = k.partition("|")
                prof = self.db.get("WRED_PROFILE", {}).get(qv.get("wred_profile", ""), {})
                if port == p and prof.get("ecn", "ecn_none") != "ecn_none":
                    ecn = {
                        "enabled": True,
                        "tc": int(qid) if qid.isdigit() else qid,
                        "min_kb": kb(prof.get("green_min_threshold", "0")),
                        "max_kb": kb(prof.get("green_max_threshold", "0")),
                    }
                    break
            res[p] = {
                "mtu": int(e.get("mtu", 9100)),
                "speed_gbps": int(e.get("speed", "0")) // 1000,
                "pfc": pfc,
                "trust": "dscp" if qm.get("dscp_to_tc_map") else "pcp",
                "ecn": ecn,
                "admin_up": e.get("admin_status", "up") == "up",
            }
        return res

    def fault_pfc_off(self, port):
        """Someone ran `config interface pfc priority <port> <p> off` and `config save -y`."""
        qm = self.db.get("PORT_QOS_MAP", {}).get(port)
        if qm:
            qm.pop("pfc_enable", None)
        self.saved = copy.deepcopy(self.db)
        self.changed()
