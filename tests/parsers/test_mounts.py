"""Mount-table parser: findmnt (UTF-8 and ASCII trees, -o columns), mount, /proc/mounts."""

from __future__ import annotations

import pytest

from crashlens.model import Fact
from crashlens.parsers.df import DfParser
from crashlens.parsers.mounts import MountsParser
from crashlens.parsers.ulimit import UlimitParser

from conftest import SAMPLES, sample_text

MOUNTS = MountsParser()
OTHERS = (DfParser(), UlimitParser())
MOUNT_SAMPLES = sorted(p.name for p in (SAMPLES / "mounts").iterdir())


def points(text: str) -> dict[str, Fact]:
    """The facts by mount point (the last one wins, as the last mount hides the others)."""
    result = MOUNTS.parse(text, "mounts.txt")
    return {str(f.value): f for f in result.facts if f.key == "mount.point"}


def attr(found: Fact, name: str) -> object:
    return dict(found.attrs).get(name)


@pytest.mark.parametrize("name", MOUNT_SAMPLES)
def test_every_sample_sniffs_and_parses(name: str) -> None:
    text = sample_text(f"mounts/{name}")
    score = MOUNTS.sniff(text[:65536])
    assert score >= 0.5
    assert all(other.sniff(text[:65536]) < score for other in OTHERS)
    result = MOUNTS.parse(text, name)
    assert result.warnings == ()
    assert all(str(f.value).startswith("/") and attr(f, "fstype") for f in result.facts)


def test_utf8_tree_loses_its_drawing() -> None:
    found = points(sample_text("mounts/findmnt_tree_container_ext4_root.txt"))
    assert attr(found["/"], "fstype") == "ext4"
    assert attr(found["/"], "source") == "/dev/vda"
    assert attr(found["/sys/fs/cgroup/unified"], "fstype") == "cgroup2"
    assert attr(found["/dev/shm"], "fstype") == "tmpfs"


def test_ascii_tree_and_fuse_and_cifs() -> None:
    found = points(sample_text("mounts/findmnt_util_linux_outputs_default_ascii_tree.txt"))
    assert attr(found["/home/kzak/.gvfs"], "fstype") == "fuse.gvfs-fuse-daemon"
    assert attr(found["/mnt/sounds"], "fstype") == "cifs"
    assert attr(found["/mnt/sounds"], "source") == "//foo.home/bar/"
    assert "rc=0" not in found  # the test harness's trailer is no row


def test_o_columns_without_options() -> None:
    text = sample_text("mounts/findmnt_o_target_source_fstype_ecryptfs_home_REPRO.txt")
    found = points(text)
    assert list(found) == ["/home/alice"]
    assert attr(found["/home/alice"], "fstype") == "ecryptfs"
    assert attr(found["/home/alice"], "options") is None


def test_mount_and_proc_mounts_agree() -> None:
    by_mount = points(sample_text("mounts/mount_container_ext4_root.txt"))
    by_proc = points(sample_text("mounts/proc_mounts_container_ext4_root.txt"))
    assert by_mount.keys() == by_proc.keys()
    assert attr(by_mount["/"], "fstype") == attr(by_proc["/"], "fstype") == "ext4"
    assert attr(by_proc["/dev/shm"], "options") == "rw,relatime,size=24683584k"


def test_escaped_spaces_in_paths() -> None:
    found = points("/dev/sdb1 /mnt/my\\040disk ext4 rw 0 0\n/dev/sdc1 /mnt/b xfs rw 0 0\n")
    assert "/mnt/my disk" in found


def test_findmnt_target_option_columns_in_another_order() -> None:
    text = "FSTYPE TARGET SOURCE\nnfs4   /shared  fs01:/export\n"
    assert MOUNTS.sniff(text) == 0.0  # not a findmnt header: TARGET must come first
    text = "TARGET  FSTYPE SOURCE\n/shared nfs4   fs01:/export\n"
    found = points(text)
    assert attr(found["/shared"], "fstype") == "nfs4"
    assert attr(found["/shared"], "source") == "fs01:/export"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "TARGET SOURCE FSTYPE\n",
        "TARGET SOURCE FSTYPE\n├─\n",
        "x on y type\n" * 3,
        "\x00\x1b[31m/dev/sda1 on / type ext4 (rw\n",
        "TARGET SOURCE FSTYPE\nnot-a-path foo bar\n",
    ],
)
def test_truncated_and_garbage_give_no_facts(text: str) -> None:
    assert MOUNTS.parse(text, "mounts.txt").facts == ()
    assert 0.0 <= MOUNTS.sniff(text) <= 1.0


def test_a_launcher_log_mentioning_mount_is_not_a_mount_table() -> None:
    text = (
        "[rank0]: loading /data/ckpt\n"
        "tmpfs on /dev/shm type tmpfs (rw,nosuid,nodev)\n"
        "[rank0]: step 10 loss 2.3\n"
        "[rank0]: step 20 loss 2.1\n"
        "[rank0]: step 30 loss 2.0\n"
    )
    assert MOUNTS.sniff(text) < 0.5
