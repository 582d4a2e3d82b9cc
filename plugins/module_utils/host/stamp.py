"""The converge stamp: what a host looked like when its last converge ended.

A converge that ran every host role (no --tags, not --check) and left nothing
pending ends by reading a list of *probes* on the host and writing, next to
the digest of its inputs (the intent, the role variables and the code that
ran), the digest of each probe's answer. The next run reads the same probes
once, in one module execution: when the inputs and every answer are as
recorded, the roles would read exactly what they read last time and change
nothing, so the host stack is skipped for that host. Any difference (a
package, a unit, a file, a firmware parameter, a QoS setting, a port state,
an address) names the probe and the host gets the full run.

Probes are reads only:

- ``commands``: argv lists, run without a shell (``run(argv) -> (rc, out,
  err)``); the digest covers the exit status and the standard output. An
  output that is JSON is compared without its ``*_life_time`` keys (address
  lifetimes count down by themselves); a missing tool is an answer too.
- ``files``: paths or glob patterns; each file's digest covers its content,
  mode, owner and group; a path that does not exist is recorded as absent.
"""

import glob
import hashlib
import json
import os
import stat as statmod

VERSION = 1


def _scrub(obj):
    if isinstance(obj, dict):
        return {k: _scrub(v) for k, v in obj.items() if not k.endswith("_life_time")}
    if isinstance(obj, list):
        return [_scrub(v) for v in obj]
    return obj


def _digest(text):
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def read_command(run, argv):
    """The digest of one command's answer (exit status and standard output)."""
    try:
        rc, out, _err = run(argv)
    except OSError as e:
        return _digest(f"missing\0{e}")
    try:
        out = json.dumps(_scrub(json.loads(out)), sort_keys=True)
    except ValueError:
        pass
    return _digest(f"{rc}\0{out}")


def read_file(path):
    """The digest of one path: content, mode, owner and group; ``absent`` when it does not exist."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "absent"
    except OSError as e:
        return _digest(f"unreadable\0{e.strerror}")
    head = f"{statmod.S_IMODE(st.st_mode):o} {st.st_uid} {st.st_gid}"
    if statmod.S_ISDIR(st.st_mode):
        return _digest(f"dir\0{head}")
    try:
        with open(path, "rb") as f:
            body = hashlib.sha256(f.read()).hexdigest()
    except OSError as e:
        body = f"unreadable {e.strerror}"
    return _digest(f"file\0{head}\0{body}")


def read_files(pattern):
    """A literal path's digest, or for a glob pattern the digest of every file it matches."""
    if not glob.has_magic(pattern):
        return read_file(pattern)
    found = sorted(p for p in glob.glob(pattern) if os.path.isfile(p))
    return _digest(json.dumps([[p, read_file(p)] for p in found]))


def observe(run, probes):
    """Each probe's key (``cmd: ...`` / ``file: ...``) and the digest of its answer now."""
    seen = {}
    for argv in probes.get("commands") or []:
        seen["cmd: " + " ".join(argv)] = read_command(run, list(argv))
    for pattern in probes.get("files") or []:
        seen["file: " + pattern] = read_files(pattern)
    return seen


def _differ(recorded, observed):
    """The probe keys whose answer now differs from the recorded one, sorted."""
    before = recorded.get("observed") or {}
    return sorted(k for k in set(before) | set(observed) if before.get(k) != observed.get(k))


def stamp(inputs, probes, observed):
    """The stamp's content (what the next run compares with)."""
    return {"version": VERSION, "inputs": inputs, "probes": probes, "observed": observed}


def compare(recorded, inputs, observed):
    """``(converged, reason, differing probe keys)`` of a recorded stamp against this run's
    inputs and the probes read now (``observed`` from the recorded stamp's own probes)."""
    if not isinstance(recorded, dict) or recorded.get("version") != VERSION:
        return False, "no converge stamp of this version on the host", []
    if recorded.get("inputs") != inputs:
        return False, "the intent, a role variable or linerate's code changed since the last converge", []
    differ = _differ(recorded, observed)
    if differ:
        more = f" (and {len(differ) - 3} more)" if len(differ) > 3 else ""
        return False, "changed since the last converge: " + "; ".join(differ[:3]) + more, differ
    return True, f"as the last converge left it ({len(observed)} probes read)", []


def refresh(recorded, inputs, observed, keys):
    """A stamp with the answers of the probes named by ``keys`` (key prefixes) taken as they are now, or
    ``(None, reason)`` when the inputs differ or a probe outside ``keys`` changed too (that is drift the
    next run must see)."""
    if not isinstance(recorded, dict) or recorded.get("version") != VERSION or recorded.get("inputs") != inputs:
        return None, "no stamp of this run's inputs to refresh"
    differ = _differ(recorded, observed)
    other = [k for k in differ if not k.startswith(tuple(keys))]
    if other:
        return None, "not refreshed, changed outside " + ", ".join(keys) + ": " + "; ".join(other[:3])
    reason = "refreshed: " + "; ".join(differ) if differ else "nothing to refresh"
    return stamp(inputs, recorded.get("probes") or {}, observed), reason


def inputs_digest(values, code):
    """The digest of a host's inputs: its role variables (a JSON-able dict) and the code's digest."""
    return _digest(json.dumps({"vars": values, "code": code}, sort_keys=True, default=str))


def tree_digest(root, subdirs):
    """The digest of every file under ``root``'s ``subdirs`` (path and content), caches left out."""
    h = hashlib.sha256()
    for sub in subdirs:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, sub)):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            for name in sorted(filenames):
                if name.endswith((".pyc", ".pyo")):
                    continue
                path = os.path.join(dirpath, name)
                h.update(os.path.relpath(path, root).encode() + b"\0")
                try:
                    with open(path, "rb") as f:
                        h.update(hashlib.sha256(f.read()).digest())
                except OSError:
                    h.update(b"unreadable")
    return h.hexdigest()
