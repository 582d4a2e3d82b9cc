"""ConnectX firmware configuration: desired mlxconfig parameters vs. what the device holds.

One algorithm (STYLE): read ``mlxconfig -d <pci> -e q`` (Default, Current,
Next Boot), compare the desired parameters with Next Boot, ``set`` only the
ones that differ (never in check mode), and report whether the running
firmware (Current) still differs from the desired values, i.e. whether a
reset is pending and which kind applies it.

The tools are called through ``run(argv) -> (rc, stdout, stderr)`` where
``argv[0]`` is the tool name; the module maps it to the binary found with
``get_bin_path`` and pins the locale. Tests pass a fake ``run``.

Parsing is done by the parsers in ``mlxconfig.py`` (``parse_mlxconfig``,
``parse_mlxfwreset_query``, ``parse_mlxfwreset``).
"""

import re

from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError, ToolFailure
from ansible_collections.linerate.fabric.plugins.module_utils.host.fwprofile import profile_params
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.mlxconfig import (
    parse_mlxconfig,
    parse_mlxconfig_set,
    parse_mlxfwreset,
    parse_mlxfwreset_query,
)
from ansible_collections.linerate.fabric.plugins.module_utils.runner import read_tool

PCI_RE = re.compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_ENUM_RE = re.compile(r"^(?P<label>.+?)\((?P<code>-?\d+)\)$")

# Kinds of reset a pending change needs, from least to most disruptive.
RESET_KINDS = ("mlxfwreset_level_3", "mlxfwreset_level_4", "reboot", "cold_reboot")


def want_token(value):
    """How a desired value is compared and passed to ``set``.

    Returns ``("value", int)`` for numbers, booleans and ``LABEL(n)`` forms,
    ``("label", str)`` for an enum name such as ``ETH``.
    """
    if isinstance(value, bool):
        return "value", int(value)
    if isinstance(value, int):
        return "value", value
    text = str(value).strip()
    enum = _ENUM_RE.match(text)
    if enum:
        return "value", int(enum.group("code"))
    if re.fullmatch(r"-?\d+", text):
        return "value", int(text)
    if re.fullmatch(r"0x[0-9a-fA-F]+", text):
        return "value", int(text, 16)
    return "label", text


def set_arg(value):
    """The ``NAME=<this>`` part of ``mlxconfig set`` for a desired value."""
    kind, token = want_token(value)
    return str(token)


def matches(value, cell):
    """True when a parsed mlxconfig cell ({raw, label, value}) holds the desired value."""
    if not cell:
        return False
    kind, token = want_token(value)
    if kind == "value":
        return cell.get("value") == token
    token = token.lower()
    return (cell.get("label") or "").lower() == token or (cell.get("raw") or "").lower() == token


def raw(cell):
    return None if cell is None else cell.get("raw")


class ConnectX:
    """One device (by PCI address) and the tools that read and change it."""

    def __init__(self, run, device, reset_level=3, cold_reboot_params=(), reboot_params=()):
        if not PCI_RE.match(device or ""):
            raise ToolFailure(f"device: {device!r} is not allowed (allowed: a PCI address such as 0000:41:00.0)")
        self.run = run
        self.device = device
        self.reset_level = reset_level
        self.cold_reboot_params = {p.upper() for p in cold_reboot_params}
        self.reboot_params = {p.upper() for p in reboot_params}
        self.commands = []

    # ------------------------------------------------------------ tools

    def _call(self, argv, parser, tool, record=False):
        if record:
            self.commands.append(argv)
        return read_tool(self.run, argv, parser)

    def query(self):
        """{NAME: {"default", "current", "next_boot"} cells} of this device."""
        argv = ["mlxconfig", "-d", self.device, "-e", "q"]
        parsed = self._call(argv, parse_mlxconfig, "mlxconfig")
        devices = parsed["devices"]
        if len(devices) != 1:
            raise ToolFailure(f"{' '.join(argv)}: expected one device, got {len(devices)}")
        return devices[0]

    def set(self, delta):
        argv = ["mlxconfig", "-d", self.device, "-y", "set"]
        argv += [f"{name}={set_arg(value)}" for name, value in sorted(delta.items())]
        self.commands.append(argv)
        rc, out, err = self.run(argv)
        # the outcome as mlxconfig prints it (applied / aborted / -E- / Applying... Failed!; reboot needed)
        try:
            outcome = parse_mlxconfig_set(out + "\n" + err)
        except ParseError as e:
            raise ToolFailure.exited(argv, rc, out, err, detail=str(e)) from None
        if rc != 0:
            raise ToolFailure.exited(argv, rc, out, err, tail=True)
        return outcome

    def reset_kind(self, pending):
        """(kind, reason) of the reset that applies the pending parameters."""
        if not pending:
            return None, None
        cold = sorted(set(pending) & self.cold_reboot_params)
        if cold:
            return "cold_reboot", f"{', '.join(cold)} take effect only after a power cycle"
        boot = sorted(set(pending) & self.reboot_params)
        if boot:
            return "reboot", f"{', '.join(boot)} are read at host boot (POST / option ROM)"
        argv = ["mlxfwreset", "-d", self.device, "q"]
        try:
            rc, out, err = self.run(argv)
        except OSError:
            return "reboot", "mlxfwreset is not installed"
        try:
            levels = parse_mlxfwreset_query(out if rc == 0 else out + "\n" + err)
        except ParseError as e:
            return "reboot", f"mlxfwreset cannot reset this device ({e})"
        if rc == 0 and self.reset_level in levels["supported_levels"]:
            return f"mlxfwreset_level_{self.reset_level}", (f"mlxfwreset supports level {self.reset_level} on {self.device}")
        return "reboot", (f"mlxfwreset level {self.reset_level} is not supported on {self.device} (supported: {levels['supported_levels']})")

    def fwreset(self):
        argv = ["mlxfwreset", "-d", self.device, "-l", str(self.reset_level), "-y", "reset"]
        return self._call(argv, parse_mlxfwreset, "mlxfwreset", record=True)


def _view(params, names):
    return {
        n: {"default": raw(params[n].get("default")), "current": raw(params[n].get("current")), "next_boot": raw(params[n].get("next_boot"))} for n in names
    }


def _pending(params, desired):
    """Desired parameters whose running (Current) value is not the desired one."""
    out = []
    for name, value in desired.items():
        cell = params[name]
        if "current" not in cell:  # a plain query: Current unknown, assume pending
            out.append(name)
        elif not matches(value, cell["current"]):
            out.append(name)
    return sorted(out)


def _diff(device, before, after):
    def text(view):
        return "".join(f"{n}={v['next_boot']} (current {v['current']})\n" for n, v in sorted(view.items()))

    return {"before": text(before), "after": text(after), "before_header": f"{device} (next boot)", "after_header": f"{device} (next boot)"}


def _check_known(dev, desired, device):
    params = dev["params"]
    unknown = sorted(n for n in desired if n not in params)
    if unknown:
        raise ToolFailure(
            f"{device}: parameter(s) {', '.join(unknown)} not reported by "
            f"'mlxconfig -d {device} -e q' ({dev.get('device_type') or 'unknown device'}); "
            "this firmware does not have them (check the name and the port suffix _P1/_P2)"
        )
    return params


def with_profile(dev, desired, profile):
    """``desired`` over the firmware profile's parameters for this device's generation.

    A profile parameter the device does not report is skipped (MAX_ACC_OUT_READ
    stays hidden until ADVANCED_PCI_SETTINGS is on in the running firmware);
    explicitly desired parameters win over the profile's. Returns
    ``(desired, profile_params, skipped, notes)``.
    """
    if not profile:
        return desired, {}, [], []
    try:
        wanted, notes = profile_params(profile, dev.get("device_type"))
    except ValueError as e:
        raise ToolFailure(str(e)) from None
    skipped = sorted(n for n in wanted if n not in dev["params"] and n not in desired)
    for name in skipped:
        notes.append(
            f"{name} skipped: not reported by this {dev.get('device_type') or 'device'} "
            "(hidden until ADVANCED_PCI_SETTINGS=1 runs in the firmware; a run after the reset sets it)"
        )
    used = {n: v for n, v in wanted.items() if n not in skipped}
    return dict(used, **desired), used, skipped, notes


def _verified(cx, params, desired, delta, before, extra):
    """state=verified: the result when Next Boot and the running firmware both hold ``desired``; else fails."""
    still = _pending(params, desired)
    if delta or still:
        raise ToolFailure(
            f"{cx.device}: parameter(s) {', '.join(sorted(set(delta) | set(still)))} are not at the desired value in the running firmware",
            before=before,
            pending_params=still,
        )
    return dict(extra, changed=False, device=cx.device, before=before, after=before, pending_reset=False, reset_kind=None, pending_params=[], commands=[])


def _set_next_boot(cx, params, delta, check_mode):
    """Write ``delta`` to Next Boot (in check mode: record the command, show the value it would write);
    returns ``(params, reboot_required)``: the parameters read back, and mlxconfig's own word on a reboot
    (None in check mode). Fails when a value did not take."""
    if check_mode:
        cx.commands.append(["mlxconfig", "-d", cx.device, "-y", "set"] + [f"{n}={set_arg(v)}" for n, v in sorted(delta.items())])
        for name, value in delta.items():
            params[name] = dict(params[name], next_boot={"raw": set_arg(value), "label": None, "value": want_token(value)[1]})
        return params, None
    outcome = cx.set(delta)
    params = cx.query()["params"]
    unset = sorted(n for n, v in delta.items() if not matches(v, params[n].get("next_boot")))
    if unset:
        raise ToolFailure(f"{cx.device}: mlxconfig set ran but Next Boot of {', '.join(unset)} is still not the desired value", cmd=cx.commands[-1])
    return params, outcome["reboot_required"]


def _reset(cx, desired, pending, kind, reason, before, after, check_mode):
    """Apply the pending parameters with mlxfwreset (state=reset); returns ``after`` as the running firmware
    holds it then. Fails when the reset cannot apply them (``kind`` is a reboot) or they did not take."""
    if not kind.startswith("mlxfwreset_level_"):
        raise ToolFailure(
            f"{cx.device}: {', '.join(pending)} pending; they need a {kind} ({reason}); mlxfwreset cannot apply them",
            pending_params=pending,
            reset_kind=kind,
            before=before,
            after=after,
        )
    if check_mode:
        cx.commands.append(["mlxfwreset", "-d", cx.device, "-l", str(cx.reset_level), "-y", "reset"])
        for name in pending:
            after[name]["current"] = after[name]["next_boot"]
        return after
    cx.fwreset()
    params = cx.query()["params"]
    after = _view(params, desired)
    still = _pending(params, desired)
    if still:
        raise ToolFailure(
            f"{cx.device}: after mlxfwreset level {cx.reset_level} the running "
            f"firmware still differs on {', '.join(still)}: not retrying; a "
            "reboot or power cycle may be needed",
            before=before,
            after=after,
            pending_params=still,
            commands=cx.commands,
        )
    return after


def configure(cx, desired, check_mode, state="present", force=False, profile=None):
    """Bring Next Boot to ``desired`` (over ``profile``'s parameters, module_utils/host/fwprofile.py);
    with state=reset also apply it; state=verified only checks.

    Returns the module result (without ``failed``); raises ToolFailure.
    """
    desired = {str(k).upper(): v for k, v in (desired or {}).items()}
    dev = cx.query()
    desired, from_profile, skipped, notes = with_profile(dev, desired, profile)
    extra = {"profile": profile, "profile_params": from_profile, "profile_skipped": skipped, "warnings": notes} if profile else {}
    params = _check_known(dev, desired, cx.device)
    before = _view(params, desired)
    delta = {n: v for n, v in desired.items() if not matches(v, params[n].get("next_boot"))}
    if state == "verified":
        return _verified(cx, params, desired, delta, before, extra)

    if delta:
        params, reboot_required = _set_next_boot(cx, params, delta, check_mode)
        if not check_mode:
            extra = dict(extra, mlxconfig_reboot_required=reboot_required)
    after = _view(params, desired)
    for name in delta:
        if check_mode:  # show what set will write, in the desired spelling
            after[name]["next_boot"] = str(desired[name])
    pending = _pending(params, desired)
    kind, reason = cx.reset_kind(pending)
    applied = None
    if state == "reset" and force and not pending:
        kind, reason = f"mlxfwreset_level_{cx.reset_level}", "forced (a new firmware image was burned)"
    if state == "reset" and (pending or force):
        after = _reset(cx, desired, pending, kind, reason, before, after, check_mode)
        applied = kind
        pending, kind, reason = [], None, None

    return dict(
        extra,
        changed=bool(delta) or applied is not None,
        device=cx.device,
        before=before,
        after=after,
        pending_reset=bool(pending),
        reset_kind=kind,
        reset_reason=reason,
        pending_params=pending,
        reset_applied=applied,
        commands=cx.commands,
        diff=_diff(cx.device, before, after),
    )
