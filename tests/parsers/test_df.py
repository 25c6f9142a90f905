"""df parser: GNU/BSD layouts, human sizes, inodes, /dev/shm."""

from __future__ import annotations

import pytest

from crashlens.model import Fact
from crashlens.parsers.df import DfParser
from crashlens.parsers.ipcs import IpcsParser
from crashlens.parsers.ulimit import UlimitParser

from conftest import SAMPLES, sample_text

DF = DfParser()
OTHERS = (IpcsParser(), UlimitParser())
CRLF_ANSI = (
    "Filesystem      Size  Used Avail Use% Mounted on\r\n"
    "\x1b[1mshm  64M 64M 0 100% /dev/shm\x1b[0m\r\n"
)
DF_SAMPLES = sorted(p.name for p in (SAMPLES / "df").glob("df_*"))


def parse(name: str) -> tuple[Fact, ...]:
    result = DF.parse(sample_text(f"df/{name}"), name)
    assert result.warnings == ()
    return result.facts


def by_mount(facts: tuple[Fact, ...], key: str) -> dict[str, Fact]:
    return {str(f.attr("mount")): f for f in facts if f.key == key}


def test_samples_exist() -> None:
    assert len(DF_SAMPLES) >= 11


@pytest.mark.parametrize("name", DF_SAMPLES)
def test_every_df_sample(name: str) -> None:
    text = sample_text(f"df/{name}")
    head = text[:65536]
    score = DF.sniff(head)
    assert score >= 0.5
    assert all(other.sniff(head) < score for other in OTHERS)
    facts = DF.parse(text, name).facts
    rows = [line for line in text.splitlines()[1:] if line.strip()]
    # One use or inode fact per row, except the pseudo filesystems with `-` use.
    usage = [f for f in facts if f.key in ("df.use_percent", "df.inode_use_percent")]
    dashes = sum(1 for line in rows if " - " in line)
    assert len(usage) == len(rows) - dashes
    assert all(f.lineno is not None and f.attr("mount") for f in usage)


def test_container_default_shm_full() -> None:
    facts = parse("df_h_inside_docker_default_shm_full_REPRO.txt")
    shm = by_mount(facts, "df.shm_size_bytes")["/dev/shm"]
    assert shm.value == 64 * 1024**2
    assert shm.attr("use_percent") == 100.0
    assert shm.attr("filesystem") == "shm"
    assert shm.lineno == 4
    use = by_mount(facts, "df.use_percent")
    assert use["/dev/shm"].value == 100.0
    assert use["/dev/shm"].attr("avail_bytes") == 0
    assert use["/"].value == 65.0
    assert use["/"].attr("filesystem") == "overlay"


def test_dev_shm_only_outputs() -> None:
    full = by_mount(parse("df_h_dev_shm_container_default_full_REPRO.txt"), "df.shm_size_bytes")
    assert full["/dev/shm"].value == 67108864
    assert full["/dev/shm"].attr("use_percent") == 99.0
    big = by_mount(parse("df_h_dev_shm_shm_size_16g_REPRO.txt"), "df.shm_size_bytes")
    assert big["/dev/shm"].value == 16 * 1024**3
    host = by_mount(parse("df_h_dev_shm_host_or_ipc_host_REPRO.txt"), "df.shm_size_bytes")
    assert host["/dev/shm"].value == 504 * 1024**3


def test_inodes_exhausted() -> None:
    facts = parse("df_i_inodes_exhausted_REPRO.txt")
    inodes = by_mount(facts, "df.inode_use_percent")
    assert inodes["/workspace/cache"].value == 100.0
    assert inodes["/workspace/cache"].attr("ifree") == 0
    assert inodes["/workspace/cache"].attr("filesystem") == "/dev/sdb1"
    assert inodes["/"].value == 16.0
    assert not [f for f in facts if f.key in ("df.use_percent", "df.shm_size_bytes")]


def test_long_filesystem_names_and_full_disks() -> None:
    use = by_mount(parse("df_h_host_checkpoint_disk_full_nfs_lustre_REPRO.txt"), "df.use_percent")
    assert use["/"].value == 100.0
    assert use["/"].attr("avail_bytes") == 0
    assert use["/scratch"].attr("avail_bytes") == 20 * 1024
    assert use["/lustre"].attr("filesystem") == "10.0.0.5@o2ib:10.0.0.6@o2ib:/lfs"
    assert use["/lustre"].value == 96.0
    assert use["/home"].attr("filesystem") == "fileserver01:/export/home"


def test_posix_type_columns_and_dash_capacity() -> None:
    use = by_mount(parse("df_PT_long_filesystem_name_jc_fixture.txt"), "df.use_percent")
    assert set(use) == {"/"}
    root = use["/"]
    assert root.attr("filesystem") == "/dev/mapper/VolGroup00-LogVol00"
    assert root.attr("fstype") == "ext3"
    assert root.attr("size_bytes") == 6030784 * 1024
    assert root.value == 21.0


def test_type_column_and_1k_blocks() -> None:
    typed = by_mount(parse("df_hT_with_type_column_REPRO.txt"), "df.use_percent")
    assert typed["/dev/shm"].attr("fstype") == "tmpfs"
    assert typed["/dev/shm"].value == 100.0
    blocks = by_mount(parse("df_1k_blocks_ubuntu1804_jc_fixture.txt"), "df.shm_size_bytes")
    assert blocks["/dev/shm"].value == 1008648 * 1024


def test_mount_points_with_spaces_and_wrapped_names() -> None:
    text = (
        "Filesystem     1K-blocks    Used Available Use% Mounted on\n"
        "/dev/sdc1       1000000  990000     10000  99% /mnt/My Data\n"
        "/dev/mapper/a-very-long-volume-group-name\n"
        "                 2000000 1000000   1000000  50% /data\n"
    )
    use = by_mount(DF.parse(text, "df.txt").facts, "df.use_percent")
    assert use["/mnt/My Data"].value == 99.0
    assert use["/data"].attr("filesystem") == "/dev/mapper/a-very-long-volume-group-name"
    assert use["/data"].lineno == 3


def test_bsd_layout_with_inode_columns() -> None:
    text = (
        "Filesystem     Size   Used  Avail Capacity iused      ifree %iused  Mounted on\n"
        "/dev/disk3s1  460Gi  120Gi  300Gi    29% 1234567 3145678901    0%   /\n"
    )
    facts = DF.parse(text, "mac.txt").facts
    assert by_mount(facts, "df.use_percent")["/"].attr("size_bytes") == 460 * 1024**3
    assert by_mount(facts, "df.inode_use_percent")["/"].value == 0.0


def test_si_sizes_from_df_H() -> None:
    text = (
        "Filesystem      Size  Used Avail Use% Mounted on\n"
        "shm              68M   68M     0 100% /dev/shm\n"
        "tmpfs           8.2k     0  8.2k   0% /x\n"
    )
    result = DF.parse(text, "dfH.txt")
    assert by_mount(result.facts, "df.shm_size_bytes")["/dev/shm"].value == 68_000_000
    assert result.warnings


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\xff\x1b[0m garbage",
        "Filesystem      Size  Used Avail Use% Mounted on\nshm   64M  64M",
        CRLF_ANSI,
        bytes(range(256)).decode("latin-1") * 8,
    ],
)
def test_bad_input(text: str) -> None:
    result = DF.parse(text, "bad.txt")
    assert all(f.key.startswith("df.") for f in result.facts)
    assert 0.0 <= DF.sniff(text) <= 1.0


def test_crlf_and_ansi() -> None:
    shm = by_mount(DF.parse(CRLF_ANSI, "crlf.txt").facts, "df.shm_size_bytes")["/dev/shm"]
    assert shm.value == 67108864


def test_truncated_last_row_is_skipped_with_a_warning() -> None:
    text = sample_text("df/df_h_inside_docker_default_shm_full_REPRO.txt")
    cut = text[: text.index("/dev/md0") + 20]
    result = DF.parse(cut, "cut.txt")
    assert by_mount(result.facts, "df.shm_size_bytes")["/dev/shm"].value == 67108864
    assert result.warnings


def test_sniff_rejects_a_launcher_log_mentioning_filesystem() -> None:
    log = (
        "[rank0]: OSError: [Errno 28] No space left on device\n"
        "Filesystem is full, checkpoint save failed\n"
        "torch.distributed.elastic.multiprocessing.api: failed (exitcode: 1)\n"
    )
    assert DF.sniff(log) < 0.5
    embedded = (
        "\n".join(["INFO step 1"] * 20)
        + "\n"
        + sample_text("df/df_h_dev_shm_container_default_full_REPRO.txt")
    )
    assert DF.sniff(embedded) < 0.5


PARSERS = (DF,)
ALL_SAMPLES = sorted(str(p.relative_to(SAMPLES)) for p in SAMPLES.rglob("*") if p.is_file())


@pytest.mark.parametrize("name", ALL_SAMPLES)
def test_any_sample_cut_anywhere_parses(name: str) -> None:
    """Other kinds' samples (and their halves) never make this parser raise or hang."""
    text = sample_text(name)
    for piece in (text, text[: len(text) // 2], text[len(text) // 3 :]):
        for parser in PARSERS:
            assert 0.0 <= parser.sniff(piece[:65536]) <= 1.0
            parser.parse(piece, name)
