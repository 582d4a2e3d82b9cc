"""NVIDIA Cumulus Linux (NVUE) driver.

Config language: ``nv set <path> <value>`` lines, the form
``nv config show -o commands`` prints. Facts are a flat mapping
``path -> value`` (one leaf per line), so want/have/commands is exact:
``nv set`` for a missing or different leaf, ``nv unset`` for a leaf in scope
that the intent does not have.

Safe mechanism: the ``nv set``/``nv unset`` lines build a pending revision;
a rejected line discards it (``nv config detach``) before anything is applied.
``nv config apply --confirm <minutes> -y`` applies with an automatic rollback
timer (the NVUE command reference reads a bare ``--confirm`` number as
minutes: ``--confirm 60`` is one hour); after the post-checks
``nv config apply --confirm-yes`` keeps it (the reference has no
``nv config confirm`` verb), or the previous revision is re-applied
(``nv config apply <rev> -y``). Whether the confirmation took is read back
from ``nv config revision``, never from the command's own answer.
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, Optional, cast

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import Driver, SwitchError
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import ber as switch_ber, counters as switch_counters, optics as switch_optics
    from ansible_collections.linerate.fabric.plugins.module_utils.common import SHELL_PROMPT_RE, ParseError
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.nvue_show import (
        SummaryRow,
        Watchdog,
        lossless_headroom,
        parse_ingress_priority_groups,
        parse_interface_summary,
        parse_pfc_watchdog,
        parse_roce_status,
    )
except ImportError:  # standalone (tests, corpus checks)
    # Standalone: either switch/ itself or module_utils/ is on sys.path (the
    # corpus check and the parser tests put module_utils/ there).
    try:
        from base import Driver, SwitchError  # type: ignore[import-not-found,no-redef]
        import ber as switch_ber  # type: ignore[import-not-found,no-redef]
        import counters as switch_counters  # type: ignore[import-not-found,no-redef]
        import optics as switch_optics  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from switch.base import Driver, SwitchError  # type: ignore[import-not-found,no-redef]
        from switch import ber as switch_ber, counters as switch_counters, optics as switch_optics  # type: ignore[import-not-found,no-redef]
    from common import SHELL_PROMPT_RE, ParseError  # type: ignore[import-not-found,no-redef]

    try:
        from nvue_show import (  # type: ignore[import-not-found,no-redef]
            SummaryRow,
            Watchdog,
            lossless_headroom,
            parse_ingress_priority_groups,
            parse_interface_summary,
            parse_pfc_watchdog,
            parse_roce_status,
        )
    except ImportError:
        from switch.nvue_show import (  # type: ignore[import-not-found,no-redef]
            SummaryRow,
            Watchdog,
            lossless_headroom,
            parse_ingress_priority_groups,
            parse_interface_summary,
            parse_pfc_watchdog,
            parse_roce_status,
        )

if TYPE_CHECKING:
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.base import PortOper, Storm

# The running config: {nv set path: value}; a scope is a predicate over the paths
NvueFacts = Dict[str, str]
NvueScope = Callable[[str], bool]


def parse_nvue_commands(text: Optional[str]) -> NvueFacts:
    """``nv config show -o commands`` (or a rendered template) -> {path: value}."""
    facts: NvueFacts = {}
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith("nv config apply"):
            continue  # the command listing may end with the apply that would load it
        if not line.startswith("nv set "):
            if line.startswith("nv "):
                raise ParseError("nvue", f"not an 'nv set' line: {line!r}")
            raise ParseError("nvue", f"unexpected output line: {line!r}")
        try:
            toks = shlex.split(line)[2:]
        except ValueError as err:
            raise ParseError("nvue", f"{err}: {line!r}")
        if len(toks) < 2:
            raise ParseError("nvue", f"'nv set' line without a value: {line!r}")
        facts[" ".join(toks[:-1])] = toks[-1]
    return facts


def _q(value: str) -> str:
    return value if re.fullmatch(r"[\w.,:/@+-]+", value) else shlex.quote(value)


def _qp(path: str) -> str:
    return " ".join(_q(t) for t in path.split(" "))


def nvue_commands(want: NvueFacts, have: NvueFacts, scope: NvueScope) -> list[str]:
    unsets = [f"nv unset {_qp(k)}" for k in have if k not in want and scope(k)]
    sets = [f"nv set {_qp(k)} {_q(v)}" for k, v in want.items() if have.get(k) != v]
    return unsets + sets


def nvue_scope(profile: str, ports: Iterable[str]) -> NvueScope:
    names = set(ports)
    q = re.compile(r"^qos (pfc|mapping|congestion-control|egress-scheduler) " + re.escape(profile) + r"( |$)")
    i = re.compile(r"^interface (\S+) (link (mtu|speed)$|qos )")

    def scope(path: str) -> bool:
        if q.match(path):
            return True
        m = i.match(path)
        return bool(m and m.group(1) in names)

    return scope


_RULE_RE = re.compile(r"^-+(\s+-+)*\s*$")


def parse_revisions(text: Optional[str]) -> list[tuple[str, str]]:
    """``nv config revision`` -> [(rev_id, state)].

    Under the ``Rev ID  State ...`` header every row is a revision: its first two words (Rev ID and
    State hold no spaces) as printed, a Rev ID that is not a number included (issue 38: a revision the
    table lists is never left out; the window compares ids as text). A row starting blank continues the
    row above (a wrapped Message). A row without a State raises ParseError naming the line: the window
    cannot tell whether it awaits confirmation. Without the header (a bare listing), lines
    ``<number> <state> ...`` are read."""
    lines = (text or "").splitlines()
    header = next((n for n, line in enumerate(lines) if re.match(r"^Rev ID\s{2,}State\b", line)), None)
    if header is None:
        return [(t[0], t[1]) for t in (line.split() for line in lines) if len(t) >= 2 and t[0].isdigit()]
    revs: list[tuple[str, str]] = []
    for number, line in enumerate(lines[header + 1 :], header + 2):
        if not line.strip() or line[0].isspace() or _RULE_RE.match(line) or SHELL_PROMPT_RE.match(line):
            continue
        toks = line.split()
        if len(toks) < 2:
            raise ParseError("nvue", "nv config revision: line %d: no State for revision %r: %r" % (number, toks[0], line), text)
        revs.append((toks[0], toks[1]))
    return revs


def confirm_minutes(seconds: Any) -> int:
    """The ``--confirm`` argument for a timer of ``seconds``: whole minutes, rounded up, at least 1.

    The NVUE command reference (Config Commands, ``nv config apply``) reads a bare number as minutes
    (``nv config apply --confirm 60`` requires a confirmation within one hour), so ``300`` would be five
    hours, not five minutes.
    """
    whole = int(seconds)
    if whole <= 0:
        raise ValueError(f"confirm timer {whole!r} s: must be positive")
    return max(1, -(-whole // 60))


class NvueDriver(Driver):
    platform = "nvue"
    device_type = "cumulus_linux"
    running_command = "nv config show -o commands"
    lldp_command = "nv show interface lldp"
    lldp_parser = "parse_nvue_lldp"
    error_patterns = (r"^Error:.*$", r"^Invalid .*$", r"^-bash: .*$")

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self._rev_before: Optional[str] = None
        self._rev_applied: Optional[str] = None
        self._committed = False
        self._revs_seen: set[str] = set()  # the revisions begin listed
        self._phy_form: Optional[str] = None  # the link phy health form this switch answered (phy_errors)
        self._counter_form: Optional[str] = None  # the error counter form this switch answered (error_counters)

    def parse_config(self, text: str) -> NvueFacts:
        return parse_nvue_commands(text)

    def managed_scope(self, want: NvueFacts, ports: Iterable[str]) -> NvueScope:
        return nvue_scope(self.profile, ports)

    def commands(self, want: NvueFacts, have: NvueFacts, scope: NvueScope) -> list[str]:
        return nvue_commands(want, have, scope)

    def out_of_scope(self, want: NvueFacts, scope: NvueScope, ports: Iterable[str]) -> list[str]:
        return [f"nv set {_qp(k)} {_q(v)}" for k, v in want.items() if not scope(k)]

    def view(self, facts: NvueFacts, scope: NvueScope) -> str:
        return "".join(f"nv set {k} {_q(v)}\n" for k, v in sorted(facts.items()) if scope(k))

    def pending(self) -> list[str]:
        problems: list[str] = []
        out = self.run("nv config diff").strip()
        if out:
            problems.append(f"pending NVUE revision:\n{out}")
        unconfirmed = self._awaiting()
        if unconfirmed:
            problems.append("applied revision(s) awaiting confirmation: " + ", ".join(unconfirmed))
        return problems

    def begin(self, tag: str) -> None:
        revs = parse_revisions(self.run("nv config revision"))
        applied = [r for r, st in revs if st.startswith("applied")]
        self._rev_before = applied[-1] if applied else None
        self._revs_seen = {r for r, st in revs}  # a revision not in here appeared during the window

    def window_timers(self, run: str) -> list[str]:
        """Revisions applied with ``--confirm`` and awaiting confirmation: NVUE rolls each back by itself when
        its timer runs out. NVUE does not say whose revision it is, so any such revision counts."""
        return [f"NVUE revision {r} is awaiting confirmation (NVUE rolls it back when its confirm timer runs out)" for r in self._awaiting()]

    def abort(self) -> None:
        self.run("nv config detach", check=False)

    def discard(self) -> None:
        """Nothing to drop: begin only read the revisions."""
        return None

    def commit(self, confirm_timeout: int) -> None:
        self._committed = True  # from here the apply may have happened, whatever the answer
        out = self.run(f"nv config apply --confirm {confirm_minutes(confirm_timeout)} -y")
        m = re.search(r"rev_id: (\d+)", out or "")
        self._rev_applied = m.group(1) if m else None

    def confirm(self) -> None:
        """Keep the applied revision: ``nv config apply --confirm-yes``, only when the revision awaiting
        confirmation is this window's own; then read back that nothing awaits confirmation any more."""
        waiting = self._awaiting()
        if self._rev_applied and waiting and waiting != [self._rev_applied]:
            raise SwitchError(
                self.name,
                f"refusing to confirm: the revision(s) awaiting confirmation ({', '.join(waiting)}) are not this window's revision {self._rev_applied}",
            )
        if not waiting:
            raise SwitchError(self.name, "nothing awaits confirmation: the confirm timer already rolled the change back, or another session ended the wait")
        self.run("nv config apply --confirm-yes")
        left = self._awaiting()
        if left:
            raise SwitchError(self.name, f"nv config apply --confirm-yes did not confirm: revision(s) {', '.join(left)} still await confirmation")

    def _awaiting(self) -> list[str]:
        return [r for r, st in parse_revisions(self.run("nv config revision")) if "confirm" in st]

    def rollback(self) -> None:
        if self._rev_before is None:
            raise SwitchError(self.name, "no earlier applied revision to roll back to")
        out = self.run(f"nv config apply {self._rev_before} -y")
        m = re.search(r"rev_id: (\d+)", out)
        if m:  # the re-applied backup is now the revision to come back to
            self._rev_before = m.group(1)

    def clear_pending(self, target_text: str) -> list[str]:
        """Only a window's leftovers are cleared: when this run broke the stale lock of a linerate window
        that died (``stale_window``), its pending revision is detached and a revision awaiting confirmation
        whose config already is the backup is confirmed. Otherwise nothing is touched (another
        administrator's pending revision stays; the pending check names it and the restore stops; an
        unconfirmed apply reverts on its own timer)."""
        done: list[str] = []
        if self.stale_window is None:
            return done
        if self.run("nv config diff").strip():
            self.run("nv config detach")
            done.append("nv config detach (discarded a pending revision)")
        waiting = self._awaiting()
        if waiting and self.get_running() == target_text:
            self.run("nv config apply --confirm-yes")
            done.append(f"nv config apply --confirm-yes (revision {waiting[-1]} already is the backup)")
        return done

    def undo(self) -> None:
        """Touch only this window's own revision. Before the apply, detach the pending revision our
        ``nv set`` lines built (the pending check saw none before them). After it, re-apply the revision
        from before the window only while the revision awaiting confirmation, or the newest applied one,
        is ours: the rev id our apply printed, or (when its answer was lost) the one revision after
        begin's listing. Another administrator's revision is left; the read-back then reports it."""
        if self._rev_before is None or not self._committed:
            self.run("nv config detach")  # nothing applied: the pending revision is our nv set lines
            return
        revs = parse_revisions(self.run("nv config revision"))
        waiting = [r for r, st in revs if "confirm" in st]
        applied = [r for r, st in revs if st.startswith("applied")]
        newer = [r for r, st in revs if r not in self._revs_seen]
        if not newer and self._rev_applied is None:
            # the apply never reached the switch (interrupted before it): still our pending revision
            self.run("nv config detach")
            return
        ours = self._rev_applied
        if ours is None:
            ours = newer[0] if len(newer) == 1 else None
        if ours is not None and (waiting == [ours] or (not waiting and applied and applied[-1] == ours)):
            self.rollback()
            self._committed = False

    def _present(self, ports: Iterable[str]) -> list[tuple[str, SummaryRow]]:
        """(port, summary row) for each of ``ports`` that ``nv show interface`` lists, in order."""
        summary = parse_interface_summary(self.run("nv show interface"))
        return [(p, summary[p]) for p in ports if p in summary]

    def _roce_status(self, ports: Iterable[str]) -> Iterator[tuple[str, SummaryRow, dict[str, Any]]]:
        """(port, summary row, ``qos roce status``) for each port the switch has; the status is read
        as the caller reaches the port, so each port's reads stay together."""
        for p, row in self._present(ports):
            yield p, row, parse_roce_status(self.run(f"nv show interface {p} qos roce status"))

    def _documented(self, command: str, parser: Callable[[str], Any]) -> Any:
        """``command -o json`` read by ``parser``; a switch whose JSON has another shape than the one
        assumed (no sample is published) is asked again for the reference's table, whose shape is
        published, so a key mismatch does not fail every post-check (issue 38)."""
        try:
            return parser(self.run(command + " -o json"))
        except ParseError as err:
            if str(err).startswith("nvue: nv show") and "Error:" not in str(err):
                return parser(self.run(command))
            raise

    def _watchdog(self, port: str) -> Watchdog:
        watchdog: Watchdog = self._documented(f"nv show interface {port} qos pfc-watchdog", parse_pfc_watchdog)
        return watchdog

    def oper(self, ports: Iterable[str]) -> dict[str, PortOper]:
        """Per port: up, PFC, trust, ECN (``qos roce status``), ``headroom`` (the priorities whose
        ingress priority group is lossless with headroom: ``qos buffer ingress-priority-group``) and
        ``pfcwd`` (the port's PFC priorities when its PFC watchdog is enabled: ``qos pfc-watchdog``)."""
        res: dict[str, PortOper] = {}
        for p, row, st in self._roce_status(ports):
            st["up"] = row["up"]
            st["headroom"] = lossless_headroom(self._documented(f"nv show interface {p} qos buffer ingress-priority-group", parse_ingress_priority_groups))
            st["pfcwd"] = list(st["pfc"]) if self._watchdog(p)["enabled"] else []
            res[p] = cast("PortOper", st)
        return res

    def pfcwd_storms(self, ports: Iterable[str]) -> dict[str, dict[str, Storm]]:
        """{port: {tc: {"detected", "stormed"}}} from ``nv show interface <p> qos pfc-watchdog -o json``:
        ``deadlock-count`` and a ``DEADLOCK`` status per traffic class (switch priority n is traffic
        class n: the default SP->TC map, which linerate's fabric config keeps)."""
        res: dict[str, dict[str, Storm]] = {}
        for p, _row in self._present(ports):
            res[p] = {str(tc): {"detected": st["deadlock"], "stormed": st["status"].upper() == "DEADLOCK"} for tc, st in self._watchdog(p)["status"].items()}
        return res

    def qos_counters(self, ports: Iterable[str]) -> dict[str, dict[str, Any]]:
        """{port: counters} from ``nv show interface <p> qos roce counters`` (read-only).

        NVUE reports the RoCE class only (no per-priority split): pause counts are
        given for the port's RoCE (PFC) priority and ``missing`` says so.
        """
        res: dict[str, dict[str, Any]] = {}
        for p, _row, st in self._roce_status(ports):
            prio = (st.get("pfc") or [None])[0]
            c = switch_counters.parse_nvue_roce_counters(self.run(f"nv show interface {p} qos roce counters"))
            key = prio if prio is not None else "roce"
            res[p] = {
                "rx_pause": {key: c["rx_pause"]},
                "tx_pause": {key: c["tx_pause"]},
                "rx_pause_total": c["rx_pause"],
                "tx_pause_total": c["tx_pause"],
                "ecn_marked": c["ecn_marked"],
                "drops": {key: c["tx_roce_discards"]},
                "cnp_tx": c["cnp_tx"],
                "per_priority": False,
                "missing": ["pause frames on priorities other than the RoCE one"],
            }
        return res

    # the port's error counters: ``counters`` (Cumulus Linux 5.5.0 and later, every release the NVUE
    # reference lists, up to the 5.19 user guide) first, then ``link stats`` (5.0.0; the 5.14 - 5.19 user
    # guides say it shows "the number of carrier transitions only") for a switch without ``counters``
    ERROR_COUNTER_FORMS = (("counters", "parse_nvue_interface_counters"), ("link stats", "parse_nvue_link_stats"))

    def error_counters(self, ports: Iterable[str]) -> dict[str, dict[str, Any]]:
        """{port: {"errors", "link_down", "link_down_unit", "missing"}} from ``nv show interface <p> counters``
        (5.5.0+: Error Counters' Total Errors Receive / Transmit as in-errors / out-errors) or, where the switch
        refuses that, ``nv show interface <p> link stats`` (in-errors / out-errors), read-only; carrier-transitions
        (two per flap: down and up) from either. The form the switch answered is kept for the next port, as
        phy_errors keeps its own; a switch that answers neither raises SwitchError naming both answers."""
        res: dict[str, dict[str, Any]] = {}
        for p, _row in self._present(ports):
            st = self._error_counters(p)
            errors = {k: st[k] for k in ("in-errors", "out-errors") if st[k] is not None}
            res[p] = {
                "errors": errors,
                "link_down": st["carrier-transitions"],
                "link_down_unit": "transitions",
                "missing": [k for k in ("in-errors", "out-errors", "carrier-transitions") if st[k] is None],
            }
        return res

    def _error_counters(self, port: str) -> dict[str, Any]:
        parsers = dict(self.ERROR_COUNTER_FORMS)
        counters: dict[str, Any] = self._read_form(
            port, parsers, lambda form, out: getattr(switch_counters, parsers[form])(out), "_counter_form", "no interface error counters"
        )
        return counters

    def _read_form(self, port: str, forms: Iterable[str], parse: Callable[[str, str], Any], kept: str, what: str) -> Any:
        """What ``parse(form, text)`` reads from the first of ``forms`` (``nv show interface <port> <form>``)
        the switch answers; the form answered is kept in ``self.<kept>`` and tried alone on the next port
        (one release, one form). A switch answering none: a SwitchError naming every answer."""
        known = getattr(self, kept)
        why: list[str] = []
        out = command = ""
        for form in [known] if known else list(forms):
            command = f"nv show interface {port} {form}"
            out = self.run(command, check=False)
            err = self.error_in(out)
            if err is None:
                try:
                    parsed = parse(form, out)
                except ParseError as exc:
                    err = str(exc)
                else:
                    setattr(self, kept, form)
                    return parsed
            why.append(f"{command!r}: {err}")
        raise SwitchError(self.name, f"{what}: " + "; ".join(why), output=out, command=command)

    def transceivers(self, ports: Iterable[str]) -> dict[str, Any]:
        """{port: module} from ``nv show platform transceiver <p>`` (Cumulus Linux 5.11+, read-only): Rx power
        per channel and temperature with the module's alarm thresholds (optics.py)."""
        res: dict[str, Any] = {}
        for p, _row in self._present(ports):
            res[p] = switch_optics.parse_nvue_platform_transceiver(self.run(f"nv show platform transceiver {p}"), p)[p]
        return res

    # the port's physical-layer error counters: the 5.15 name first, then the 5.10 - 5.14 one (the
    # NVUE command reference: "In Cumulus Linux 5.14 and earlier, this command is ... link phy-detail")
    PHY_HEALTH_FORMS = ("link phy health", "link phy-detail")

    def phy_errors(self, ports: Iterable[str]) -> dict[str, Any]:
        """{port: errors} from ``nv show interface <p> link phy health`` (5.15+) or ``... link phy-detail``
        (5.10 - 5.14), read-only: raw-ber (pre-FEC), effective-ber (post-FEC), effective-errors (the bits FEC
        did not correct, as ``fec_uncorrected``) (ber.py). The form the switch answers is kept for the next
        port; Cumulus Linux 5.9 and earlier have neither: a SwitchError names both answers."""
        res: dict[str, Any] = {}
        for p, _row in self._present(ports):
            res.update(self._phy_health(p))
        return res

    def _phy_health(self, port: str) -> dict[str, Any]:
        health: dict[str, Any] = self._read_form(
            port,
            self.PHY_HEALTH_FORMS,
            lambda form, out: switch_ber.parse_nvue_phy_health(out, port),
            "_phy_form",
            "no physical-layer error counters (Cumulus Linux 5.10 and later print them)",
        )
        return health
