"""The release gates on the artifact, for every supported ansible-core (`make release-check`).

1. The README's "From the built collection" block, as written, in a fresh virtualenv outside the
   checkout (tests/release/test_readme_built_collection.py).
2. The artifact is built once (`ansible-galaxy collection build` of this checkout, the .venv's
   ansible-core); then for each ansible-core in CORES, from a virtualenv of its own
   (.ansible/release-check/core-<version>: that ansible-core and RELEASE_REQUIREMENTS, on the
   Python it needs, made once and reused):
   - ansible-test sanity on the unpacked artifact (tests/sanity/run.py, that core's ansible-test,
     tests/sanity/ignore-<X.Y>.txt beside it);
   - galaxy-importer on the artifact: it must end "Importer processing completed successfully"
     with no WARNING or ERROR line (ansible-lint and ansible-doc of that core run inside it);
   - ansible-lint, profile production, in the artifact installed with `ansible-galaxy collection
     install` (its dependency ansible.posix beside it: the copy the ansible package of the .venv
     ships, as Galaxy may not be reachable).
Every gate runs, then the summary names each one's result; the exit status is 1 if any failed.

A core's Python (ansible-core 2.20 and later need Python >= 3.12 on the controller): the
LINERATE_PYTHON_<X>_<Y> variable (LINERATE_PYTHON_3_12=/usr/bin/python3.12), else python<X.Y> on
PATH, else the newest pyenv build of it (~/.pyenv/versions/<X.Y>.*).

Usage: tests/sanity/release_check.py [--only readme|2.19|2.20|2.21 ...] [--gate sanity|galaxy-importer|ansible-lint ...]
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SANITY = os.path.join(ROOT, "tests", "sanity")
BIN = os.path.dirname(sys.executable)
VENVS = os.path.join(ROOT, ".ansible", "release-check")
RELEASE_REQUIREMENTS = os.path.join(SANITY, "release-requirements.txt")
# The supported ansible-core lines (meta/runtime.yml: >=2.19.0, no cap): the release tested, the
# controller Python it runs on. ansible-core 2.19 is the .venv's (requirements-dev.txt).
CORES = {
    "2.19": ("2.19.14", "3.11"),
    "2.20": ("2.20.10", "3.12"),
    "2.21": ("2.21.5", "3.12"),
}
IMPORTER_CONFIG = """[galaxy-importer]
run_ansible_doc = True
run_ansible_lint = True
run_ansible_test = False
"""


def _release(path):
    """~/.pyenv/versions/3.12.10/bin/python3.12 -> [3, 12, 10]: pyenv builds in release order."""
    return [int(x) for x in re.findall(r"\d+", path.split("/versions/")[1].split("/")[0])]


def python_for(version):
    """The interpreter for Python `version` ("3.12"), or a SystemExit naming where it was looked for. A
    candidate counts when it runs and says it is that version (a pyenv shim of an unselected one does not)."""
    var = "LINERATE_PYTHON_" + version.replace(".", "_")
    builds = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")), key=_release)
    for candidate in [os.environ.get(var), shutil.which(f"python{version}"), *reversed(builds)]:
        if (
            candidate
            and subprocess.run(
                [candidate, "-c", f"import sys; sys.exit(sys.version[:{len(version) + 1}] != '{version}.')"], capture_output=True, check=False
            ).returncode
            == 0
        ):
            return candidate
    raise SystemExit(
        f"release-check: no Python {version} (needed by ansible-core for {version}): set {var}, put python{version} on PATH, or install it with pyenv"
    )


def core_venv(line):
    """The virtualenv for the ansible-core line `line` ("2.20"), made or updated when its pins changed."""
    core, python = CORES[line]
    venv = os.path.join(VENVS, f"core-{core}")
    with open(RELEASE_REQUIREMENTS, encoding="utf-8") as f:
        want = f"python {python}\nansible-core=={core}\n{f.read()}"
    marker = os.path.join(venv, "linerate-release-check.txt")
    if os.path.exists(marker):
        with open(marker, encoding="utf-8") as f:
            if f.read() == want:
                return venv
    subprocess.run([python_for(python), "-m", "venv", "--clear", venv], check=True)
    subprocess.run(
        [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", f"ansible-core=={core}", "-r", RELEASE_REQUIREMENTS],
        check=True,
    )
    with open(marker, "w", encoding="utf-8") as f:
        f.write(want)
    return venv


def build(work):
    """The artifact: this checkout built once, with the .venv's ansible-galaxy."""
    out = os.path.join(work, "artifact")
    subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--force", "--output-path", out, ROOT], check=True, stdout=subprocess.DEVNULL)
    (name,) = [f for f in os.listdir(out) if f.endswith(".tar.gz")]
    return os.path.join(out, name)


def venv_env(venv, **extra):
    """The environment of a gate: that venv's tools first, nothing of the checkout's Ansible settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_") and k != "VIRTUAL_ENV"}
    env.update(PATH=os.path.join(venv, "bin") + os.pathsep + "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", ANSIBLE_NOCOLOR="1", NO_COLOR="1", **extra)
    return env


def sanity(venv, artifact, _work, python):
    cmd = [os.path.join(venv, "bin", "python"), os.path.join(SANITY, "run.py"), "--artifact", artifact, "--local", "--python", python]
    return subprocess.run(cmd, env=venv_env(venv), check=False).returncode == 0


def galaxy_importer(venv, artifact, work, _python):
    """galaxy-importer's verdict: rc 0, its success line, and not one WARNING or ERROR line."""
    config = os.path.join(work, "galaxy-importer.cfg")
    with open(config, "w", encoding="utf-8") as f:
        f.write(IMPORTER_CONFIG)
    home = os.path.join(work, "importer-home")
    os.makedirs(home, exist_ok=True)
    r = subprocess.run(
        [os.path.join(venv, "bin", "python"), "-m", "galaxy_importer.main", artifact],
        env=venv_env(venv, GALAXY_IMPORTER_CONFIG=config, HOME=home),
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
    )
    output = r.stdout + r.stderr
    flagged = [line for line in output.splitlines() if line.startswith(("WARNING", "ERROR"))]
    for line in flagged:
        print(f"galaxy-importer: {line}")
    ok = r.returncode == 0 and not flagged and "Importer processing completed successfully" in output
    if not ok:
        print(output[-4000:])
    return ok


def ansible_lint(venv, artifact, work, _python):
    """ansible-lint --profile production inside the artifact as ansible-galaxy installs it."""
    collections = os.path.join(work, "collections")
    shutil.rmtree(collections, ignore_errors=True)
    os.makedirs(os.path.join(work, "lint-home"), exist_ok=True)
    env = venv_env(venv, ANSIBLE_COLLECTIONS_PATH=collections, HOME=os.path.join(work, "lint-home"))
    subprocess.run(
        [os.path.join(venv, "bin", "ansible-galaxy"), "collection", "install", "--no-deps", artifact], env=env, check=True, stdout=subprocess.DEVNULL
    )
    posix = os.path.join(sysconfig.get_paths()["purelib"], "ansible_collections", "ansible", "posix")
    shutil.copytree(posix, os.path.join(collections, "ansible_collections", "ansible", "posix"))
    installed = os.path.join(collections, "ansible_collections", "linerate", "fabric")
    return (
        subprocess.run([os.path.join(venv, "bin", "ansible-lint"), "--profile", "production", "--nocolor"], cwd=installed, env=env, check=False).returncode == 0
    )


# Each gate of one ansible-core: (its venv, the artifact, a scratch directory, the core's Python X.Y) -> passed.
GATES = {"sanity": sanity, "galaxy-importer": galaxy_importer, "ansible-lint": ansible_lint}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", nargs="+", choices=["readme", *CORES], help="run only these parts")
    parser.add_argument("--gate", nargs="+", choices=list(GATES), help="of each ansible-core, run only these gates")
    options = parser.parse_args(argv)
    only = set(options.only or ["readme", *CORES])
    gates = options.gate or list(GATES)
    results = {}
    start = time.monotonic()
    if "readme" in only:
        t = time.monotonic()
        rc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.join(ROOT, "tests", "release")], cwd=ROOT, check=False
        ).returncode
        results["README built-collection block"] = (rc == 0, time.monotonic() - t)
    with tempfile.TemporaryDirectory(prefix="linerate-release-") as work:
        artifact = build(work) if only & set(CORES) else None
        for line in (c for c in CORES if c in only):
            venv = core_venv(line)
            for gate in gates:
                run, args = GATES[gate], (venv, artifact, work, CORES[line][1])
                t = time.monotonic()
                print(f"release-check: ansible-core {CORES[line][0]}: {gate}", flush=True)
                results[f"ansible-core {CORES[line][0]}: {gate}"] = (run(*args), time.monotonic() - t)
    print("\nrelease-check:")
    for name, (ok, seconds) in results.items():
        print(f"  {'pass' if ok else 'FAIL'}  {name} ({seconds:.0f} s)")
    print(f"  {time.monotonic() - start:.0f} s in all")
    return 0 if all(ok for ok, _s in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
