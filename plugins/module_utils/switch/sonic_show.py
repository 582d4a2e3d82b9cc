"""What SONiC's show commands print, read: the sonic-utilities tables (``parse_table``), ``show pfc
priority``, ``show interfaces status``, ``show ecn``; and the lossless headroom a port has, from CONFIG_DB
and APPL_DB (``lossless_pgs``). Pure functions, stdlib only; the SONiC driver (switch/sonic.py) reads its
oper state with them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable, Optional, TypedDict

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import SHELL_PROMPT_RE, ParseError
    from ansible_collections.linerate.fabric.plugins.module_utils.switch import buffers
except ImportError:  # standalone: switch/ itself or module_utils/ is on sys.path
    try:
        import buffers  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from switch import buffers  # type: ignore[import-not-found,no-redef]
    from common import SHELL_PROMPT_RE, ParseError  # type: ignore[import-not-found,no-redef]

if TYPE_CHECKING:
    from ansible_collections.linerate.fabric.plugins.module_utils.switch.sonic_delta import ConfigDb


class _StatusRowBase(TypedDict):
    up: bool
    admin_up: bool
    mtu: Optional[int]
    speed: str


class StatusRow(_StatusRowBase, total=False):
    """One row of ``show interfaces status``; ``warnings`` only where a cell was not read."""

    warnings: list[str]


def parse_table(text: Optional[str]) -> list[dict[str, str]]:
    """A sonic-utilities (tabulate) table -> list of row dicts keyed by header.

    Columns come from the dashed rule under the header; each cell's text goes
    to the column it overlaps most (or the nearest), so left- and
    right-aligned cells both land in their column. The
    first table only: it ends at a blank line (tabulate prints none inside a
    table), so a capture of two commands does not read the second prompt and
    header as rows.
    """
    lines = (text or "").splitlines()
    for i in range(1, len(lines)):
        if not re.match(r"^\s*-{2,}(\s+-{2,})+\s*$", lines[i]) or not lines[i - 1].strip():
            continue
        spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[i])]

        def cells(row: str) -> list[str]:
            # a cell is a run of words with single spaces (tabulate puts two
            # or more between columns); it belongs to the column its text
            # overlaps most, or the nearest one, so a row printed a character
            # off its rule (the Command Reference's examples) still lands
            out: list[list[str]] = [[] for span in spans]
            for word in re.finditer(r"\S+(?: \S+)*", row):
                j = max(range(len(spans)), key=lambda k: min(word.end(), spans[k][1]) - max(word.start(), spans[k][0]))
                out[j].append(word.group(0))
            return [" ".join(words) for words in out]

        heads = cells(lines[i - 1])
        rows: list[dict[str, str]] = []
        for row in lines[i + 1 :]:
            if not row.strip() or re.match(r"^\s*-{2,}", row):
                break
            rows.append(dict(zip(heads, cells(row))))
        return rows
    return []


def _pg_range(pg: Optional[str]) -> set[int]:
    """'3' -> {3}; '3-4' -> {3, 4} (sonic-buffer-pg.yang pg_num pattern [0-7]((-)[0-7])?)."""
    m = re.fullmatch(r"([0-7])(?:-([0-7]))?", pg or "")
    if not m:
        return set()
    lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
    return set(range(lo, hi + 1))


def _appl_name(value: Optional[str]) -> str:
    """An APPL_DB reference as a name: '[BUFFER_PROFILE_TABLE:pg_x]' (older releases) or 'pg_x'."""
    value = (value or "").strip("[]")
    return value.split(":", 1)[1] if ":" in value else value


def headroom_need(db: ConfigDb, port: str) -> Optional[int]:
    """The xoff the switch's own SKU needs on ``port`` at its speed and cable length (the row of its
    pg_profile_lookup.ini, buffers.PLATFORM_BUFFERS), or None where linerate has no table for the SKU."""
    sku = ((db.get("DEVICE_METADATA") or {}).get("localhost") or {}).get("hwsku")
    if sku not in buffers.PLATFORM_BUFFERS:
        return None
    speed = (db.get("PORT", {}).get(port) or {}).get("speed", "")
    cable = (db.get("CABLE_LENGTH", {}).get(buffers.CABLE_LENGTH_KEY) or {}).get(port)
    skus: dict[str, Any] = buffers.PLATFORM_BUFFERS
    row = skus[str(sku)]["rows"].get((int(speed), cable)) if speed.isdigit() else None
    return int(row["xoff"]) if row else None


def lossless_pgs(db: ConfigDb, port: str, appl: Optional[Callable[[str], dict[str, str]]] = None) -> list[int]:
    """The priority groups of ``port`` with lossless headroom: a BUFFER_PG entry whose profile exists,
    draws from a lossless pool and has an xoff (the headroom that absorbs what is in flight once the
    port has sent its pause). The TC->PG map is the identity (the fabric template's
    TC_TO_PRIORITY_GROUP_MAP), so a PG number is a priority. A PG with ``profile: NULL`` (the dynamic
    buffer model) has the profile buffermgrd computed: ``appl(key) -> fields`` reads APPL_DB's
    BUFFER_PG_TABLE:<port>:<pg> and the BUFFER_PROFILE_TABLE entry it names; without ``appl`` (the
    traditional model) NULL is no headroom. Where linerate has the switch's SKU's table, an xoff below
    its row for the port's speed and cable length (headroom_need) is too little: what is in flight after
    the pause overflows it, the PG drops under incast."""
    need = headroom_need(db, port)
    out: set[int] = set()
    profiles = db.get("BUFFER_PROFILE", {})
    for key, ent in db.get("BUFFER_PG", {}).items():
        name, _sep, pg = key.partition("|")
        if name != port:
            continue
        prof: Optional[dict[str, str]] = profiles.get(ent.get("profile", ""))
        if ent.get("profile", "NULL") == "NULL" and appl is not None:
            got = _appl_name(appl(f"BUFFER_PG_TABLE:{port}:{pg}").get("profile"))
            prof = appl(f"BUFFER_PROFILE_TABLE:{got}") if got else None
        xoff = (prof or {}).get("xoff", "0")
        if prof and "lossless" in prof.get("pool", "") and xoff.isdigit() and int(xoff) > max(0, (need or 1) - 1):
            out |= _pg_range(pg)
    return sorted(out)


def _columns(rows: list[dict[str, str]], tool: str, text: Optional[str], *names: str) -> list[dict[str, str]]:
    """The rows of a ``parse_table`` table, or ParseError when a column the parser reads is not in its header
    (issue 38: a renamed column is never read as an empty table)."""
    if rows and not all(n in rows[0] for n in names):
        raise ParseError(
            "sonic", "%s: the header has no %s column (columns: %s)" % (tool, " / ".join(repr(n) for n in names if n not in rows[0]), ", ".join(rows[0])), text
        )
    return rows


def parse_pfc_priority(text: Optional[str]) -> dict[str, list[int]]:
    """``show pfc priority`` -> {port: [prio, ...]}.

    The cell is PORT_QOS_MAP's ``pfc_enable`` as sonic-utilities' pfc prints it (``3,4``; ``N/A`` or blank
    when unset: no priority). A cell that is not priorities 0-7, or a header without ``Interface`` /
    ``Lossless priorities``, raises ParseError naming it (the read-back cannot prove PFC from it)."""
    if re.search(r"^Cannot find interface", text or "", re.M):
        raise ParseError("sonic", f"{(text or '').strip()}")
    out: dict[str, list[int]] = {}
    for r in _columns(parse_table(text), "show pfc priority", text, "Interface", "Lossless priorities"):
        if not r.get("Interface"):
            continue
        cell = r["Lossless priorities"]  # every row has the header's columns (_columns checked it)
        items = [x.strip() for x in cell.split(",")] if cell not in ("", "N/A") else []
        if not all(x.isdigit() and int(x) < 8 for x in items):
            raise ParseError("sonic", "show pfc priority: %s: %r is not a list of priorities 0-7" % (r["Interface"], cell), text)
        out[r["Interface"]] = sorted({int(x) for x in items})
    return out


# the oper/admin cells intfutil prints (up, down; N/A where the state is not in APPL_DB/STATE_DB)
_SONIC_STATES = ("up", "down", "N/A")
# the columns of intfutil's ``show interfaces status`` (sonic-utilities scripts/intfutil, header_stat)
STATUS_COLUMNS = ("Interface", "Lanes", "Speed", "MTU", "FEC", "Alias", "Vlan", "Oper", "Admin", "Type", "Asym PFC")


def parse_interfaces_status(text: Optional[str]) -> dict[str, StatusRow]:
    """``show interfaces status`` -> {port: {"up": bool, "admin_up": bool, "mtu": int, "speed": str}}.

    A header without ``Interface`` / ``Oper`` raises ParseError. A row whose MTU is neither a number nor
    ``N/A``, or whose Oper / Admin cell is none of up, down, N/A (or blank: the row does not fit), has
    ``warnings`` naming the cell (read as unknown / not up; issue 38), and so does every row under a
    header with a column none of STATUS_COLUMNS; a row read cleanly has no such key."""
    out: dict[str, StatusRow] = {}
    rows = _columns(parse_table(text), "show interfaces status", text, "Interface", "Oper")
    unknown = ["column %r is not read (unknown to this parser)" % c for c in (rows[0] if rows else ()) if c not in STATUS_COLUMNS]
    for r in rows:
        name = r.get("Interface")
        if not name:
            continue
        mtu = r.get("MTU", "")
        out[name] = {"up": r.get("Oper") == "up", "admin_up": r.get("Admin") == "up", "mtu": int(mtu) if mtu.isdigit() else None, "speed": r.get("Speed", "")}
        notes = unknown + [
            "%s %r is not up, down or N/A: read as not up" % (col, r[col]) for col in ("Oper", "Admin") if r.get(col) and r[col] not in _SONIC_STATES
        ]
        notes += [
            "no %s cell: the row does not fit the header: %r" % (col, "  ".join(v for v in r.values() if v))
            for col in ("Oper", "Admin")
            if col in r and not r[col]
        ]
        if mtu not in ("", "N/A") and not mtu.isdigit():
            notes.append("MTU %r is not a number: read as unknown" % mtu)
        if notes:
            out[name]["warnings"] = notes
    return out


def parse_show_ecn(text: Optional[str]) -> dict[str, dict[str, Any]]:
    """``show ecn`` -> {profile: {field: value}}: every ``field  value`` row under a ``Profile:`` line, the field
    as printed (issue 38: a field this parser does not know is read, not dropped). Any other line in a
    profile is named in that profile's ``warnings`` list (present only then). The dashed rules and lines
    before the first profile are not read; a prompt line ends the profile (a capture's next command)."""
    profiles: dict[str, dict[str, Any]] = {}
    cur: Optional[dict[str, Any]] = None
    for number, line in enumerate((text or "").splitlines(), 1):
        m = re.match(r"^\s*Profile:\s*\**([^*\s]+)\**\s*$", line)
        if m:
            cur = profiles.setdefault(m.group(1), {})
            continue
        head = re.match(r"^\s*([A-Za-z][\w -]*):\s*\**([^*\s]+)\**\s*$", line)
        if head and not SHELL_PROMPT_RE.match(line.strip()):
            # ``<Name>: <value>`` where a ``Profile:`` line stands: its rows would belong to no profile
            raise ParseError("sonic", "show ecn: line %d: %r is not a 'Profile: <name>' line" % (number, line.strip()), text)
        if cur is None or not line.strip() or re.match(r"^\s*-+(\s+-+)*\s*$", line):
            continue
        if SHELL_PROMPT_RE.match(line.strip()):
            cur = None  # the next command of a capture
            continue
        m = re.match(r"^\s*(\S+)\s+(\S+)\s*$", line)
        if m and m.group(1) != "warnings":
            cur[m.group(1)] = m.group(2)
        else:
            cur.setdefault("warnings", []).append("line %d: not a 'field  value' row: %r" % (number, line.strip()))
    return profiles
