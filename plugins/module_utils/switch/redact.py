"""Secrets of a switch configuration, masked in what a restore returns (commands, before/after, diff,
messages, the command log). Backups on disk keep the full text (mode 0600).

A restore replaces the whole running configuration, so its result carries
every line of it: password hashes, SNMP communities, TACACS+/RADIUS keys.
Each secret becomes ``<redacted-N>``; one Redactor numbers them, so the
same secret has the same mask in ``before``, ``after`` and ``commands``
(a diff still shows whether it changed) and the value itself never appears.

What counts as a secret, per platform (the forms the switches print):

- NVUE (``nv config show -o commands``; NVUE command reference, Cumulus
  Linux 5.x: ``nv set system aaa user <u> password|hashed-password <v>``,
  ``nv set system aaa tacacs|radius server <s> secret <v>``,
  ``nv set service snmp-server readonly-community <community> access any``,
  ``... username <u> auth-md5|auth-sha <v> encrypt-aes|encrypt-des <v>``,
  trap destinations' ``community-password <v>``): the token after a
  secret keyword, and a community name where it is part of the path.
- EOS (``show running-config``; Arista EOS User Manual, "User Security" and
  "SNMP"): ``username ... secret [0|5|7|sha512] <v>``, ``enable password|secret
  ...``, ``aaa root secret ...``, ``tacacs-server|radius-server [host ...] key
  [0|7|8a] <v>``, ``neighbor ... password [0|7] <v>``, ``snmp-server community
  <community>``, ``snmp-server user ... auth <alg> <v> priv <alg> <v>``,
  ``ntp authentication-key <n> <alg> [0|7] <v>``.
- SONiC (CONFIG_DB; sonic-net/SONiC doc/snmp/snmp-configdb-migration-hld.md,
  sonic-buildimage src/sonic-yang-models sonic-system-tacacs.yang /
  sonic-system-radius.yang): the key of ``SNMP_COMMUNITY|<community>``; fields
  named ``passkey``, ``*PASSWORD*``, ``*secret*``, MACsec ``primary_cak`` /
  ``primary_ckn``.

Over-masking is harmless (a restore result is for reading); the window's
own results hold QoS only and are not passed through here.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Match

_VALUE = r"""('[^']*'|"[^"]*"|\S+)"""
_LINE_RULES: dict[str, list[re.Pattern[str]]] = {
    "nvue": [
        re.compile(
            r"(?<=\s)(?:password|hashed-password|secret|key|community-password|auth-md5|auth-sha"
            r"|encrypt-aes|encrypt-des|readonly-community(?:-v6)?)\s+" + _VALUE
        ),
    ],
    "eos": [
        re.compile(r"(?<![\w-])(?:secret|password|key)(?:\s+(?:0|5|7|8a|sha512|md5))?\s+" + _VALUE),
        re.compile(r"\bsnmp-server\s+community\s+" + _VALUE),
        re.compile(r"\b(?:auth|priv)\s+(?:md5|sha\d*|des|3des|aes\d*)\s+" + _VALUE),
        re.compile(r"\bauthentication-key\s+\d+\s+\S+(?:\s+[07])?\s+" + _VALUE),
    ],
    "sonic": [
        re.compile(r"\bSNMP_COMMUNITY\|([^\s'\"|]+)"),
        re.compile(r"(?i)\b\w*(?:passkey|password|secret|_cak|_ckn)\w*['\"]?\s+" + _VALUE),
        re.compile(r"(?i)\"\w*(?:passkey|password|secret|_cak|_ckn)\w*\"\s*:\s*(\"[^\"]*\")"),
    ],
}
_SONIC_SECRET_FIELD = re.compile(r"(?i)(passkey|password|secret|_cak$|_ckn$)")
_SONIC_SECRET_KEYS = ("SNMP_COMMUNITY",)


class Redactor:
    """Masks secrets of one platform's configuration text, numbering them consistently."""

    def __init__(self, platform: str) -> None:
        if platform not in _LINE_RULES:
            raise ValueError(f"no redaction rules for platform {platform!r} (allowed: {', '.join(_LINE_RULES)})")
        self.platform = platform
        self.masks: dict[str, str] = {}

    def mask(self, secret: str) -> str:
        secret = secret.strip("'\"")
        if secret.startswith("<redacted-"):
            return secret
        return self.masks.setdefault(secret, f"<redacted-{len(self.masks) + 1}>")

    def text(self, text: Any) -> Any:
        """Free text (config lines, commands, messages): every secret masked."""
        if text is None or not isinstance(text, str):
            return text
        if self.platform == "sonic" and text.lstrip().startswith("{"):
            return self._sonic_json(text)
        for rule in _LINE_RULES[self.platform]:
            text = rule.sub(self._sub, text)
        return text

    def _sub(self, m: Match[str]) -> str:
        start, end = m.span(1)
        base = m.start(0)
        whole = m.group(0)
        value, tail = m.group(1), ""
        if value.endswith(";") and len(value) > 1:  # a message's "; " separator, not part of the value
            value, tail = value[:-1], ";"
        return whole[: start - base] + self.mask(value) + tail + whole[end - base :]

    def _sonic_json(self, text: str) -> str:
        try:
            data = json.loads(text)
        except ValueError:
            for rule in _LINE_RULES["sonic"]:
                text = rule.sub(self._sub, text)
            return text
        if not isinstance(data, dict):
            return text
        out: dict[str, Any] = {}
        for table, keys in data.items():
            if not isinstance(keys, dict):
                out[table] = keys
                continue
            new: dict[str, Any] = {}
            for key, fields in keys.items():
                if table in _SONIC_SECRET_KEYS:
                    key = self.mask(key)
                if isinstance(fields, dict):
                    fields = {f: (self.mask(str(v)) if _SONIC_SECRET_FIELD.search(f) else v) for f, v in fields.items()}
                new[key] = fields
            out[table] = new
        return json.dumps(out, indent=4, sort_keys=True) + ("\n" if text.endswith("\n") else "")

    def lines(self, items: Iterable[Any]) -> list[Any]:
        return [self.text(x) for x in items]

    def result(self, result: dict[str, Any]) -> dict[str, Any]:
        """A module result of the restore path, masked in place and returned."""
        for k in ("commands", "cleared", "warnings"):
            if isinstance(result.get(k), list):
                result[k] = self.lines(result[k])
        for k in ("before", "after"):
            if k in result:
                result[k] = self.text(result[k])
        diff = result.get("diff")
        if isinstance(diff, dict):
            for k in ("before", "after"):
                if k in diff:
                    diff[k] = self.text(diff[k])
        return result
