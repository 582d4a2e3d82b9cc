"""ConnectX firmware image: compare the device with a supplied image, burn only when it differs.

Reads ``flint -d <pci> q`` and ``flint -i <image> q`` (same ``Key:  value``
layout), refuses an image whose PSID is not the device's (a PSID names the
board's firmware flavour; burning another one is how cards get bricked),
and burns with ``flint -d <pci> -i <image> -y burn`` only when the versions
differ (a downgrade only when allowed). A burned image runs after a firmware
reset: the result says so (``pending_reset``).

``read_flint_query`` reads the query text here (not a ``parse_*`` parser of
the parsers' contract).
"""
import re


class Failure(Exception):
    def __init__(self, msg, **kw):
        super().__init__(msg)
        self.msg = msg
        self.kw = kw


_KEYS = {"fw version": "fw_version", "fw version(running)": "fw_version_running", "psid": "psid",
         "image type": "image_type", "product version": "product_version", "base guid": "base_guid",
         "base mac": "base_mac", "security attributes": "security_attributes",
         "fw release date": "fw_release_date"}


def read_flint_query(text):
    """``flint q`` -> {fw_version, fw_version_running?, psid, ...}; ValueError on errors."""
    errors = [ln.strip() for ln in (text or "").splitlines() if ln.strip().startswith("-E-")]
    if errors:
        raise ValueError("; ".join(errors))
    out = {}
    for line in (text or "").splitlines():
        m = re.match(r"^([A-Za-z][A-Za-z ()]*?):\s+(\S.*?)\s*$", line)
        if m and m.group(1).strip().lower() in _KEYS:
            value = m.group(2)
            key = _KEYS[m.group(1).strip().lower()]
            if key in ("base_guid", "base_mac"):
                value = value.split()[0]
            out[key] = value
    if "fw_version" not in out or "psid" not in out:
        first = next((ln.strip() for ln in (text or "").splitlines() if ln.strip()), "empty output")
        raise ValueError(f"no FW Version / PSID in flint output (first line: {first!r})")
    return out


def version_tuple(v):
    return tuple(int(x) for x in re.findall(r"\d+", v or ""))


class Flint:
    def __init__(self, run, device):
        self.run = run
        self.device = device
        self.commands = []

    def query(self, argv):
        rc, out, err = self.run(argv)
        try:
            parsed = read_flint_query(out if rc == 0 else out + "\n" + err)
        except ValueError as e:
            raise Failure(f"{' '.join(argv)}: {e}", rc=rc, stdout=out, stderr=err, cmd=argv) from None
        if rc != 0:
            raise Failure(f"{' '.join(argv)} exited {rc}", rc=rc, stdout=out, stderr=err, cmd=argv)
        return parsed

    def burn(self, image):
        argv = ["flint", "-d", self.device, "-i", image, "-y", "burn"]
        self.commands.append(argv)
        rc, out, err = self.run(argv)
        if rc != 0 or "-E-" in out + err:
            raise Failure(f"{' '.join(argv)} failed (rc {rc}): {(err or out).strip()[-400:]}",
                          rc=rc, stdout=out, stderr=err, cmd=argv)


def ensure_image(fl, image, psid=None, allow_downgrade=False, check_mode=False):
    dev = fl.query(["flint", "-d", fl.device, "q"])
    img = fl.query(["flint", "-i", image, "q"])
    expected = psid or dev["psid"]
    if dev["psid"] != expected:
        raise Failure(f"{fl.device}: device PSID {dev['psid']} is not the expected {expected}")
    if img["psid"] != dev["psid"]:
        raise Failure(f"{fl.device}: image {image} is for PSID {img['psid']}, the device is "
                      f"{dev['psid']}: refusing to burn another board's firmware")
    burned = dev["fw_version"]
    running = dev.get("fw_version_running", burned)
    before = {"fw_version": burned, "fw_version_running": running, "psid": dev["psid"]}
    want = img["fw_version"]
    changed = False
    if version_tuple(burned) != version_tuple(want):
        if version_tuple(want) < version_tuple(burned) and not allow_downgrade:
            raise Failure(f"{fl.device}: image {want} is older than the device's {burned}; "
                          "set allow_downgrade to burn it")
        changed = True
        if check_mode:
            fl.commands.append(["flint", "-d", fl.device, "-i", image, "-y", "burn"])
        else:
            fl.burn(image)
            dev = fl.query(["flint", "-d", fl.device, "q"])
            if version_tuple(dev["fw_version"]) != version_tuple(want):
                raise Failure(f"{fl.device}: burned {image} but flint reports {dev['fw_version']}",
                              commands=fl.commands)
            running = dev.get("fw_version_running", running)
    after = {"fw_version": want, "fw_version_running": running, "psid": before["psid"]}
    pending = version_tuple(running) != version_tuple(want)
    return {"changed": changed, "device": fl.device, "before": before, "after": after,
            "image_version": want, "pending_reset": pending,
            "reset_kind": "mlxfwreset_level_3" if pending else None, "commands": fl.commands,
            "diff": {"before": f"{fl.device} firmware {burned} (running {before['fw_version_running']})\n",
                     "after": f"{fl.device} firmware {want} (running {running})\n"}}
