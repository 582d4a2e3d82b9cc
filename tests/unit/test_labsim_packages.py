"""lab/packages.py and lab/debrepo.py: the simulator packages and the flat apt repository."""

import ast
import gzip
import hashlib
import os
import shutil
import subprocess
import sys

import pytest

from labsim import ROOT, kmods

sys.path.insert(0, os.path.join(ROOT, "lab"))
import packages  # noqa: E402

KERNELS = ["6.1.0-18-amd64", "6.1.0-25-amd64"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    out = tmp_path_factory.mktemp("apt") / "repo"
    packages.build_repo(str(out), kernels=KERNELS)
    return out


def field(deb, name):
    return subprocess.run(["dpkg-deb", "-f", str(deb), name], check=True, capture_output=True, text=True).stdout.strip()


def deb(repo, name, version=None):
    found = sorted(repo.glob(f"{name}_{version or '*'}_amd64.deb"))
    assert found, f"{name} {version} not built"
    return found[-1]


def test_control_fields(repo):
    d = deb(repo, "mlnx-tools", "24.10.0-1.2410114")
    info = subprocess.run(["dpkg-deb", "-I", str(d)], check=True, capture_output=True, text=True).stdout
    for key in (
        "Package: mlnx-tools",
        "Version: 24.10.0-1.2410114",
        "Architecture: amd64",
        "Maintainer: Mellanox Technologies <support@mellanox.com>",
        "Depends: python3",
        "Description: Userspace tools to restart and tune MLNX_OFED kernel modules",
    ):
        assert " " + key in info
    assert field(deb(repo, "doca-ofed"), "Depends").startswith("mlnx-ofed-kernel-utils (= 24.10.OFED.24.10.1.1.4.1-1), mlnx-tools (= 24.10.0-1.2410114)")
    assert "mlnx-ofed-kernel-dkms (= 24.10.OFED.24.10.1.1.4.1-1)" in field(deb(repo, "doca-ofed"), "Depends")
    dkms = deb(repo, "mlnx-ofed-kernel-dkms", "24.10.OFED.24.10.1.1.4.1-1")
    assert field(dkms, "Conflicts") == "mlnx-ofed-kernel-modules"
    assert field(dkms, "Replaces") == "mlnx-ofed-kernel-modules"
    assert field(deb(repo, "nvidia-open", "550.54.15-1"), "Depends") == ("nvidia-driver (= 550.54.15-1), nvidia-kernel-open-dkms (= 550.54.15-1)")


def test_files_are_root_owned_launchers(repo):
    listing = subprocess.run(["dpkg-deb", "-c", str(deb(repo, "mft", "4.30.0-139"))], check=True, capture_output=True, text=True).stdout
    assert "-rwxr-xr-x root/root" in listing and "./usr/bin/mlxconfig" in listing
    assert all("root/root" in line for line in listing.splitlines())
    tools_dir = os.path.join(ROOT, "lab", "sim", "linerate_lab", "tools")
    for name in (
        "mft_4.30.0-139",
        "mlnx-tools_24.10.0-1.2410114",
        "infiniband-diags_2410mlnx54-1.2410114",
        "ibverbs-utils_2410mlnx54-1.2410114",
        "linerate-lab-hw_1.0",
        "nvidia-smi_550.54.15-1",
        "mlnx-ofed-kernel-utils_24.10.OFED.24.10.1.1.4.1-1",
    ):
        tmp = repo.parent / ("x-" + name)
        subprocess.run(["dpkg-deb", "-x", str(repo / f"{name}_amd64.deb"), str(tmp)], check=True)
        for path in tmp.rglob("*"):
            if path.is_file() and os.access(path, os.X_OK):
                text = path.read_text()
                if path.name in packages.IB_DIAG_TOOLS:  # the real programs (below)
                    assert text.startswith("#!/bin/sh\n"), path
                    continue
                assert text.startswith("#!/usr/bin/python3\n")
                tree = ast.parse(text)
                module = next(n.names[0].name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom))
                assert os.path.exists(os.path.join(tools_dir, module + ".py")), (path, module)


def test_modules_package_carries_its_kernel(repo):
    for kver in KERNELS:
        d = deb(repo, "mlnx-ofed-kernel-modules", f"24.10.OFED.24.10.1.1.4.1.kver.{kver}")
        listing = subprocess.run(["dpkg-deb", "-c", str(d)], check=True, capture_output=True, text=True).stdout
        assert f"./lib/modules/{kver}/updates/mlx5_core.ko" in listing
    tmp = repo.parent / "mods"
    subprocess.run(["dpkg-deb", "-x", str(d), str(tmp)], check=True)
    info = kmods.read_ko(str(tmp / f"lib/modules/{KERNELS[-1]}/updates/mlx5_core.ko"))
    assert info["version"] == "24.10-1.1.4" and info["vermagic"].startswith(KERNELS[-1] + " ")


def test_versions_sort_above_bookworm(repo):
    assert shutil.which("dpkg"), "dpkg is needed to compare versions as apt does (Debian hosts have it)"

    def gt(a, b):
        return subprocess.run(["dpkg", "--compare-versions", a, "gt", b]).returncode == 0

    for name in ("rdma-core", "ibverbs-utils", "infiniband-diags"):
        for d in repo.glob(f"{name}_*.deb"):
            assert gt(field(d, "Version"), "44.0-2"), d
    assert gt("24.10.OFED.24.10.1.1.4.1.kver.6.1.0-18-amd64", "23.10.OFED.23.10.2.1.3.1.kver.6.1.0-25-amd64")
    assert gt("24.10.OFED.24.10.1.1.4.1.kvez", "24.10.OFED.24.10.1.1.4.1.kver.6.1.0-25-amd64")


def test_index(repo):
    text = (repo / "Packages").read_text()
    assert gzip.decompress((repo / "Packages.gz").read_bytes()).decode() == text
    stanzas = [s for s in text.split("\n\n") if s.strip()]
    assert len(stanzas) == len(list(repo.glob("*.deb")))
    for stanza in stanzas:
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line)
        data = (repo / fields["Filename"][2:]).read_bytes()
        assert int(fields["Size"]) == len(data)
        assert fields["SHA256"] == hashlib.sha256(data).hexdigest()
    release = (repo / "Release").read_text()
    sha = hashlib.sha256((repo / "Packages").read_bytes()).hexdigest()
    assert f" {sha} " in release and "Architectures: amd64" in release


def test_dkms_postinst_builds_peermem_only_against_ofed(repo, tmp_path):
    script = subprocess.run(
        ["dpkg-deb", "-I", str(deb(repo, "nvidia-kernel-open-dkms", "550.54.15-1")), "postinst"], check=True, capture_output=True, text=True
    ).stdout
    root = tmp_path / "root"
    script = script.replace("/lib/modules/", f"{root}/lib/modules/").replace("/usr/src/ofa_kernel", f"{root}/usr/src/ofa_kernel")
    kver = os.uname().release
    subprocess.run(["sh", "-c", script, "postinst", "configure"], check=True)
    built = sorted(p.name for p in (root / "lib/modules" / kver / "updates/dkms").iterdir())
    assert built == ["nvidia-drm.ko", "nvidia-modeset.ko", "nvidia-uvm.ko", "nvidia.ko"]
    (root / "usr/src/ofa_kernel/default").mkdir(parents=True)
    (root / "usr/src/ofa_kernel/default/Module.symvers").write_text("")
    subprocess.run(["sh", "-c", script, "postinst", "configure"], check=True)
    info = kmods.read_ko(str(root / "lib/modules" / kver / "updates/dkms/nvidia-peermem.ko"))
    assert info["version"] == "550.54.15" and info["depends"] == "ib_core,nvidia"
    assert info["vermagic"].startswith(kver + " ")


def test_infiniband_diags_runs_the_real_programs(repo, tmp_path):
    """OFED's infiniband-diags: ibstat/ibstatus read the model; sminfo and the
    other MAD tools run Debian's real programs kept in the node image, and say
    so clearly where the image lacks them."""
    d = deb(repo, "infiniband-diags")
    subprocess.run(["dpkg-deb", "-x", str(d), str(tmp_path)], check=True)
    sbin = tmp_path / "usr" / "sbin"
    assert "linerate_lab.tools import ibstat" in (sbin / "ibstat").read_text()
    for tool in ("sminfo", "ibnetdiscover", "iblinkinfo", "smpquery", "saquery"):
        text = (sbin / tool).read_text()
        assert f"real={packages.REAL_IB_DIAGS}/usr/sbin/{tool}" in text
        assert os.access(sbin / tool, os.X_OK)
    if not os.path.exists(packages.REAL_IB_DIAGS):
        p = subprocess.run([str(sbin / "sminfo")], capture_output=True, text=True)
        assert p.returncode == 127
        assert "sminfo: not in this node image" in p.stderr


def test_the_repository_recipe_covers_the_modules_the_packages_are_built_with(tmp_path, monkeypatch):
    """A change to packages.py or to a lab module it builds the packages with (the .deb writer, the .ko
    placeholders) changes labimage.repo_recipe, so the repository and the node image are rebuilt."""
    import labimage

    made_of = set(labimage.made_of("packages.py"))
    assert {"packages.py", "debrepo.py", "sim/linerate_lab/kmods.py"} <= made_of  # the import finder finds them
    assert "sim/linerate_lab/placeholder.py" in made_of  # and what they import in turn (kmods)

    for rel in made_of:
        os.makedirs(os.path.dirname(tmp_path / rel), exist_ok=True)
        shutil.copy(os.path.join(ROOT, "lab", rel), tmp_path / rel)
    monkeypatch.setattr(labimage, "HERE", str(tmp_path))
    before = labimage.repo_recipe()
    assert labimage.repo_recipe() == before  # the same files, the same recipe
    for rel in sorted(made_of):
        with open(tmp_path / rel, "a") as f:
            f.write("\n# changed\n")
        after = labimage.repo_recipe()
        assert after != before, f"lab/{rel} shapes the packages but not labimage.repo_recipe"
        before = after
