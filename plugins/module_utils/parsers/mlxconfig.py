"""Parsers for NVIDIA firmware configuration tools: mlxconfig / mstconfig and mlxfwreset.

Pure functions, stdlib only, importable on their own. ``mstconfig``
(mstflint) prints the same layout as ``mlxconfig`` (MFT), so both go through
the same parsers.

A parameter value as mlxconfig prints it (``ETH(2)``, ``True(1)``,
``_256KB(1)``, ``10``, ``148``, ``Array[0..15]``) is returned as a value
dict::

    {"raw": "ETH(2)", "label": "ETH", "value": 2}

``value`` is the number mlxconfig accepts in ``set`` (the enum code, or the
plain number), ``label`` the enum name (None for plain numbers). Arrays give
``{"raw": "Array[0..15]", "label": "Array", "value": None, "array": [0, 15]}``.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn, Optional, Sequence, TypedDict

try:
    from ansible_collections.linerate.fabric.plugins.module_utils.common import ParseError
except ImportError:  # loaded standalone, with module_utils on sys.path
    from common import ParseError  # type: ignore[import-not-found,no-redef]


_COLUMN_KEYS = {
    "default": "default",
    "current": "current",
    "next boot": "next_boot",
    "new": "new",
}

_DEVICE_FIELDS = {
    "device type": "device_type",
    "name": "name",
    "description": "description",
    "device": "device",
    "pci device": "device",
}

_ENUM_RE = re.compile(r"^(?P<label>.+?)\((?P<code>-?\d+)\)$")
_ARRAY_RE = re.compile(r"^Array\[(?P<low>\d+)\.\.(?P<high>\d+)\]$")
_PCI_RE = re.compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_ERROR_RE = re.compile(r"^-E-\s*(?P<msg>.*)$")
_FAILURE_RE = re.compile(
    r"command not found|Permission denied|No devices found|Failed to open device|"
    r"MST driver is not loaded|mst driver is not loaded",
    re.IGNORECASE,
)


class _ValueBase(TypedDict):
    raw: str
    label: Optional[str]
    value: Optional[int]


class MlxconfigValue(_ValueBase, total=False):
    """One mlxconfig cell (see the module docstring); ``array`` for ``Array[low..high]``."""

    array: list[int]


class MlxconfigDevice(TypedDict):
    """One ``Device #N:`` block. ``params``: {NAME: {"modified": bool, and per column
    ("default", "current", "next_boot", "new") an MlxconfigValue}}."""

    index: int
    device_type: Optional[str]
    name: Optional[str]
    description: Optional[str]
    device: Optional[str]
    pci: Optional[str]
    params: dict[str, dict[str, Any]]


class Mlxconfig(TypedDict):
    """``parse_mlxconfig``."""

    devices: list[MlxconfigDevice]
    warnings: list[str]


# One parameter ``set`` changes: the Next Boot value before, the New one ("from" is a keyword: the functional form).
MlxconfigChange = TypedDict("MlxconfigChange", {"from": Optional[str], "to": str})


class MlxconfigSet(TypedDict):
    """``parse_mlxconfig_set``."""

    devices: list[MlxconfigDevice]
    changes: dict[str, MlxconfigChange]
    applied: bool
    reboot_required: bool
    warnings: list[str]


class ResetOption(TypedDict):
    """One ``N: <description> -Supported|-Not Supported`` line of ``mlxfwreset query``."""

    id: int
    description: str
    supported: bool
    default: bool
    reason: Optional[str]


class MlxfwresetQuery(TypedDict):
    """``parse_mlxfwreset_query``."""

    levels: list[ResetOption]
    types: list[ResetOption]
    sync: list[ResetOption]
    methods: list[ResetOption]
    warnings: list[str]
    default_level: Optional[int]
    supported_levels: list[int]


class ResetStep(TypedDict):
    step: str
    status: str


class Mlxfwreset(TypedDict):
    """``parse_mlxfwreset``."""

    level: Optional[int]
    level_description: Optional[str]
    steps: list[ResetStep]
    success: bool


def _lines(text: Optional[str]) -> list[str]:
    """Split ``text`` into lines, tolerating None and CRLF."""
    return (text or "").replace("\r\n", "\n").split("\n")


def normalize_value(raw: str) -> MlxconfigValue:
    """Normalize one mlxconfig cell: ``'ETH(2)'`` -> ``{"raw", "label", "value"}``."""
    raw = raw.strip()
    enum = _ENUM_RE.match(raw)
    if enum:
        return {"raw": raw, "label": enum.group("label"), "value": int(enum.group("code"))}
    array = _ARRAY_RE.match(raw)
    if array:
        return {"raw": raw, "label": "Array", "value": None, "array": [int(array.group("low")), int(array.group("high"))]}
    if re.fullmatch(r"-?\d+", raw):
        return {"raw": raw, "label": None, "value": int(raw)}
    if re.fullmatch(r"0x[0-9a-fA-F]+", raw):
        return {"raw": raw, "label": None, "value": int(raw, 16)}
    return {"raw": raw, "label": raw, "value": None}


def _raise_on_tool_errors(tool: str, text: Optional[str]) -> None:
    """Raise ParseError for ``-E-`` lines and well-known failures."""
    errors: list[str] = []
    for line in _lines(text):
        stripped = line.strip()
        match = _ERROR_RE.match(stripped)
        if match:
            errors.append(match.group("msg"))
        elif _FAILURE_RE.search(stripped):
            errors.append(stripped)
    if errors:
        raise ParseError(tool, "; ".join(errors), text)


def _column_names(header_line: str) -> list[str]:
    """``Configurations:   Default   Current   Next Boot`` -> ['default', 'current', 'next_boot']."""
    rest = header_line.split(":", 1)[1]
    names = [name.strip().lower() for name in re.split(r"\s{2,}|\t+", rest.strip()) if name.strip()]
    return [_COLUMN_KEYS.get(name, name.replace(" ", "_")) for name in names]


def _parse_param_line(line: str, columns: Sequence[str]) -> Optional[tuple[str, dict[str, Any], int]]:
    """``*   LINK_TYPE_P1   ETH(2)   IB(1)`` -> (name, param dict, number of value cells) or None."""
    match = _PARAM_RE.match(line)
    if not match:
        return None
    cells = match.group("rest").split()
    param: dict[str, Any] = {"modified": bool(match.group("star"))}
    for column, cell in zip(columns, cells):
        param[column] = normalize_value(cell)
    return match.group("name"), param, len(cells)


# A parameter row: the name as mlxconfig prints it. The parameter database has names with
# lower-case letters and dots as well as the usual upper-case ones, so any identifier is a name
# (class 1 of issue 38: a name the pattern did not expect vanished from the query).
_PARAM_RE = re.compile(
    r"^\s*(?P<star>\*)?\s*(?P<name>[A-Za-z_][A-Za-z0-9_.]*(?:\[\d+(?:\.\.\d+)?\])?)"
    r"\s+(?P<rest>\S.*?)\s*$"
)
# Lines mlxconfig prints that carry no parameter: the echoed command, the set prompt and outcome,
# -I-/-W- notes. Anything else that is not a device field or a row is named in ``warnings``.
_NOT_A_ROW_RE = re.compile(
    r"^(?:(?:\[[^\]]*\]|[\w.@:~/-]+)?[#$]\s|(?:sudo\s+)?(?:mlxconfig|mstconfig)\b|"
    r"-I-|Apply new Configuration|Applying\.\.\.|Aborted by user|"
    r"The '\*' shows parameters)",
    re.IGNORECASE,
)


# Rows without a "Configurations:" header (``mlxconfig q | grep ...``): one
# value cell is a plain query's Next Boot; three are ``-e q``'s
# Default / Current / Next Boot. Any other count is not guessed.
_HEADERLESS_COLUMNS = ["default", "current", "next_boot"]


def _new_device(index: int) -> MlxconfigDevice:
    return {"index": index, "device_type": None, "name": None, "description": None, "device": None, "pci": None, "params": {}}


def _parse_device_field(line: str, device: MlxconfigDevice) -> bool:
    """Fill a ``Device type:`` / ``Name:`` / ``Device:`` header field; True if it was one."""
    match = re.match(r"^(?P<key>[A-Za-z][A-Za-z ]*?):\s*(?P<value>.*?)\s*$", line.strip())
    if not match or match.group("key").lower() not in _DEVICE_FIELDS:
        return False
    field = _DEVICE_FIELDS[match.group("key").lower()]
    value = match.group("value")
    device[field] = None if value in ("", "N/A") else value  # type: ignore[literal-required]  # a _DEVICE_FIELDS value
    if field == "device" and value and _PCI_RE.match(value):
        device["pci"] = value
    return True


def _parse_devices(text: Optional[str]) -> tuple[list[MlxconfigDevice], list[str]]:
    """Walk ``Device #N:`` blocks; shared by query and set output."""
    devices: list[MlxconfigDevice] = []
    warnings: list[str] = []
    device: Optional[MlxconfigDevice] = None
    columns: Optional[list[str]] = None
    for lineno, line in enumerate(_lines(text), 1):
        stripped = line.strip()
        if not stripped or set(stripped) == {"-"} or stripped in ("(...)", "..."):
            continue
        number = re.match(r"^Device #(\d+):", stripped)
        if number:
            device = _new_device(int(number.group(1)))
            devices.append(device)
            columns = None
            continue
        if stripped.startswith("Configurations:"):
            if device is None:  # a filtered query starting at the table
                device = _new_device(1)
                devices.append(device)
            columns = _column_names(stripped)
            continue
        if columns is None and device is not None and _parse_device_field(stripped, device):
            continue
        if _NOT_A_ROW_RE.match(stripped):
            continue
        parsed = _parse_param_line(line, columns or _HEADERLESS_COLUMNS)
        if not parsed:
            warnings.append("line %d: not read (neither a device field nor a parameter row): %r" % (lineno, stripped))
            continue
        name, param, ncells = parsed
        if columns is None and ncells not in (1, 3):
            warnings.append("line %d: %d value cells without a Configurations: header; expected 1 (q) or 3 (-e q): %r" % (lineno, ncells, stripped))
            continue
        if columns is None and ncells == 1:
            param = {"modified": param["modified"], "next_boot": param["default"]}
        if device is None:  # rows only (``mlxconfig q | grep ...``)
            device = _new_device(1)
            devices.append(device)
        device["params"][name] = param
    return devices, warnings


def parse_mlxconfig(text: Optional[str]) -> Mlxconfig:
    """Parse ``mlxconfig -d <dev> q`` / ``-e q`` (and ``mstconfig``) output.

    Handles one or more ``Device #N:`` blocks with ``Device type:``,
    ``Name:``, ``Description:`` and ``Device:`` (older MFT: ``PCI device:``),
    then a ``Configurations:`` table whose columns are read from its header:
    plain ``q`` prints one column (``Next Boot``, the value the next reset
    loads), ``-e q`` prints ``Default  Current  Next Boot``; narrow (MFT
    4.x) and wide (ConnectX-9 era) column layouts alike. A leading ``*``
    (``-e``) marks a parameter whose next-boot value differs from
    default/current: ``modified: True``. Author elisions ``(...)`` are
    skipped; expanded array rows (``NAME[3]``) are separate parameters.
    Output filtered down to the rows (``q | grep``: no ``Configurations:``
    line, with or without the ``Device #N:`` lines) is read by its cell
    count: one cell is ``q``'s Next Boot, three are ``-e q``'s Default /
    Current / Next Boot; a row with another count is not guessed at and
    goes to ``warnings``.

    Returns ``{"devices": [{"index", "device_type", "name", "description",
    "device", "pci", "params": {NAME: {"modified": bool, "default"?,
    "current"?, "next_boot"?: {"raw", "label", "value"}}}}], "warnings":
    [str]}``.

    Raises ParseError on ``-E-`` lines (no device, failed to open device,
    unknown parameter), a missing tool, permission errors, or output
    without any device/parameter.
    """
    _raise_on_tool_errors("mlxconfig", text)
    devices, warnings = _parse_devices(text)
    if not devices or not any(device["params"] or device["device_type"] for device in devices):
        _raise_empty("mlxconfig", text, warnings)
    return {"devices": devices, "warnings": warnings}


_SET_PROMPT_RE = re.compile(r"Apply new Configuration\?\s*\?*\s*\(y/n\)\s*\[n\]\s*:\s*(?P<answer>\S*)", re.IGNORECASE)


def parse_mlxconfig_set(text: Optional[str]) -> MlxconfigSet:
    """Parse ``mlxconfig -d <dev> [-y] set NAME=VALUE ...`` (and ``mstconfig``) output: the outcome.

    The device block and its ``Configurations:  Next Boot  New`` table are
    read as in ``parse_mlxconfig``; then the answer to ``Apply new
    Configuration? (y/n) [n] :`` (``-y`` answers ``y``; older MFT prints
    ``Apply new Configuration? ?``), ``Applying... Done!`` or ``Applying...
    Failed!`` and ``-I- Please reboot machine to load new configurations.``
    (mstflint mlxconfig/mlxcfg_ui.cpp; published captures in docs/parsers.md).

    Returns ``{"devices": [... as parse_mlxconfig, params with "next_boot"
    and "new"], "changes": {NAME: {"from": raw, "to": raw}} (all devices),
    "applied": bool, "reboot_required": bool, "warnings": [str]}``.

    Raises ParseError when nothing was applied: ``-E-`` lines (an unknown
    or unsupported parameter, ``Failed to set configuration``), ``Applying...
    Failed!``, a prompt answered ``n`` or an ``Aborted by user`` line, or
    output without the ``Applying... Done!`` line.
    """
    tool = "mlxconfig set"
    if text is None or not text.strip():
        raise ParseError(tool, "empty output", text)
    _raise_on_tool_errors(tool, text)
    if re.search(r"^\s*Applying\.\.\.\s*Failed", text, re.MULTILINE):
        raise ParseError(tool, "Applying... Failed!: the new configuration was not written", text)
    prompt = _SET_PROMPT_RE.search(text)
    if (prompt and prompt.group("answer") and prompt.group("answer").lower() not in ("y", "yes")) or re.search(r"aborted by user", text, re.IGNORECASE):
        raise ParseError(tool, "aborted by the user at 'Apply new Configuration?': nothing was written", text)
    devices, warnings = _parse_devices(text)
    applied = bool(re.search(r"^\s*Applying\.\.\.\s*Done", text, re.MULTILINE))
    if not applied:
        if prompt and not prompt.group("answer"):
            raise ParseError(tool, "the output ends at the 'Apply new Configuration?' prompt (run with -y): nothing was written", text)
        first = next(line.strip() for line in _lines(text) if line.strip())
        raise ParseError(tool, "no 'Applying... Done!' line: the outcome is unknown (first line: %r)" % first, text)
    changes: dict[str, MlxconfigChange] = {}
    for device in devices:
        for name, param in device["params"].items():
            if "new" in param:
                changes[name] = {"from": param.get("next_boot", {}).get("raw"), "to": param["new"]["raw"]}
    # -I- notes other than the reboot request are not dropped (-W- lines are already in warnings)
    warnings += [line.strip() for line in _lines(text) if line.strip().startswith("-I-") and "Please reboot machine to load new configurations" not in line]
    return {
        "devices": devices,
        "changes": changes,
        "applied": True,
        "reboot_required": bool(re.search(r"Please reboot machine to load new configurations", text)),
        "warnings": warnings,
    }


def _raise_empty(tool: str, text: Optional[str], warnings: Sequence[str] = ()) -> NoReturn:
    if not (text or "").strip():
        raise ParseError(tool, "empty output", text)
    if any("value cells" in warning for warning in warnings):
        raise ParseError(tool, "no parameter could be read: " + "; ".join(warnings), text)
    first = next(line.strip() for line in _lines(text) if line.strip())
    raise ParseError(tool, "no device/parameter table in output (first line: %r)%s" % (first, "".join("; " + warning for warning in warnings[:3])), text)


# --------------------------------------------------------------------------
# mlxfwreset
# --------------------------------------------------------------------------

_RESET_SECTION_RE = re.compile(r"^Reset-(?P<kind>[a-z]+)(?:\s*\((?P<note>[^)]*)\))?\s*:\s*$", re.IGNORECASE)
_RESET_OPTION_RE = re.compile(
    r"^(?P<num>\d+):\s*(?P<desc>.*?)\s*-(?P<support>Supported|Not Supported)"
    r"(?:\s*\((?P<reason>Reason:[^)]*)\))?\s*(?P<default>\(default\))?\s*$"
)
_RESET_SECTION_KEYS = {"levels": "levels", "types": "types", "sync": "sync", "method": "methods", "methods": "methods"}


def parse_mlxfwreset_query(text: Optional[str]) -> MlxfwresetQuery:
    """Parse ``mlxfwreset -d <dev> query`` (MFT 4.x, mstfwreset alike).

    Sections ``Reset-levels:``, ``Reset-types (relevant only for
    reset-levels 3,4):``, ``Reset-sync (...)`` and ``Reset-method (...)``
    each list ``N: <description>  -Supported|-Not Supported [(Reason: ..)]
    [(default)]``.

    Returns ``{"levels": [{"id", "description", "supported", "default",
    "reason"}], "types": [...], "sync": [...], "methods": [...],
    "default_level": int|None, "supported_levels": [int], "warnings": [str]}``: a line that is
    neither a section heading nor an option line is named in ``warnings``.

    Raises ParseError on ``-E-`` lines (e.g. ``Unsupported Device``) and on
    output without a ``Reset-levels:`` section.
    """
    _raise_on_tool_errors("mlxfwreset", text)
    options: dict[str, list[ResetOption]] = {"levels": [], "types": [], "sync": [], "methods": []}
    warnings: list[str] = []
    section: Optional[str] = None
    for lineno, line in enumerate(_lines(text), 1):
        stripped = line.strip()
        header = _RESET_SECTION_RE.match(stripped)
        if header:
            section = _RESET_SECTION_KEYS.get(header.group("kind").lower())
            if section is None:
                warnings.append("line %d: a section this parser does not know: %r" % (lineno, stripped))
            continue
        option = _RESET_OPTION_RE.match(stripped)
        if not option or not section:
            if stripped and not _NOT_A_ROW_RE.match(stripped):  # named, never dropped (issue 38)
                warnings.append("line %d: not read: %r" % (lineno, stripped))
            continue
        if option and section:
            reason = option.group("reason")
            options[section].append(
                {
                    "id": int(option.group("num")),
                    "description": option.group("desc"),
                    "supported": option.group("support") == "Supported",
                    "default": bool(option.group("default")),
                    "reason": reason[len("Reason:") :].strip() if reason else None,
                }
            )
    levels = options["levels"]
    if not levels:
        _raise_empty("mlxfwreset", text)
    return {
        "levels": levels,
        "types": options["types"],
        "sync": options["sync"],
        "methods": options["methods"],
        "warnings": warnings,
        "default_level": next((lvl["id"] for lvl in levels if lvl["default"]), None),
        "supported_levels": [lvl["id"] for lvl in levels if lvl["supported"]],
    }


_RESET_STEP_RE = re.compile(r"^-I-\s*(?P<step>.*?)\s+-(?P<status>Done|Skipped|Failed|Not Supported)\s*$")


def parse_mlxfwreset(text: Optional[str]) -> Mlxfwreset:
    """Parse ``mlxfwreset -d <dev> [-y] reset`` output (MFT 4.x).

    Reads the chosen level (``3: Driver restart and PCI reset`` after
    ``Minimal reset level for device`` / ``The reset level for device ...
    is:``), the ``-I- <step>  -Done|-Skipped`` steps and the final
    ``-I- FW was loaded successfully.``.

    Returns ``{"level": int|None, "level_description", "steps": [{"step",
    "status"}], "success": bool}``.

    Raises ParseError on ``-E-`` lines (``Unsupported Device``, a failed
    step) and on a declined prompt.
    """
    _raise_on_tool_errors("mlxfwreset", text)
    if re.search(r"Continue with reset\?\s*\[y/N\]\s*n\b", text or "", re.IGNORECASE):
        raise ParseError("mlxfwreset", "reset declined at the prompt", text)
    level = re.search(r"^\s*(\d+):\s*(.+?)\s*$", text or "", re.MULTILINE)
    steps: list[ResetStep] = []
    for line in _lines(text):
        step = _RESET_STEP_RE.match(line.strip())
        if step:
            steps.append({"step": step.group("step"), "status": step.group("status")})
    success = bool(re.search(r"FW was loaded successfully", text or ""))
    if not steps and not success:
        _raise_empty("mlxfwreset", text)
    failed = [s["step"] for s in steps if s["status"] == "Failed"]
    if failed:
        raise ParseError("mlxfwreset", "step failed: " + ", ".join(failed), text)
    return {
        "level": int(level.group(1)) if level else None,
        "level_description": level.group(2) if level else None,
        "steps": steps,
        "success": success,
    }
