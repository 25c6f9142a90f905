"""The tolerant JSON reader on real pastes: trailing garbage, trailing commas, truncation."""

from __future__ import annotations

import json

import pytest

from crashlens.text.tolerant_json import (
    Repair,
    json_start,
    read_first_value,
    strip_trailing_commas,
)

from conftest import sample_text

GARBAGE = sample_text("docker_inspect/docker_inspect_watchtower_memory_limit_trailing_garbage.json")
COMMAS = sample_text("docker_inspect/podman_inspect_docs_example_trailing_commas.json")
ARRAY = sample_text("docker_inspect/docker_inspect_running_shm16g_privileged_device_ids_REPRO.json")


def test_json_start_skips_a_pasted_command_and_log_prefixes() -> None:
    text = '$ docker inspect web\n[rank0]: not json\n[\n  {"Id": 1}\n]\n'
    start = json_start(text)
    assert start is not None and text[start:].startswith("[\n  {")
    assert json_start("[rank0]: hello\n[INFO] started\n") is None
    assert json_start("plain words") is None


def test_trailing_garbage_is_left_after_the_end() -> None:
    first = read_first_value(GARBAGE, json_start(GARBAGE) or 0)
    assert first is not None and first.repair is None
    assert first.end is not None and first.end < len(GARBAGE)
    assert GARBAGE[first.end :].lstrip().startswith(",\n  {")
    assert [item["Name"] for item in first.value] == ["/webserver"]


def test_trailing_commas_are_forgiven_and_the_end_is_in_the_original_text() -> None:
    first = read_first_value(COMMAS, json_start(COMMAS) or 0)
    assert first is not None and first.repair is Repair.TRAILING_COMMAS
    assert first.end is not None and COMMAS[first.end - 1] == "]"
    assert COMMAS[first.end :].strip() == ""
    assert first.value[0]["State"]["Status"] == "exited"


def test_strip_trailing_commas_keeps_commas_inside_strings() -> None:
    assert json.loads(strip_trailing_commas('{"a": [1, 2,], "b": ",}",}')) == {
        "a": [1, 2],
        "b": ",}",
    }


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.8, 0.99])
def test_a_truncated_document_is_closed_at_its_last_complete_value(fraction: float) -> None:
    whole = json.loads(ARRAY)
    cut = ARRAY[: int(len(ARRAY) * fraction)]
    first = read_first_value(cut, json_start(cut) or 0)
    assert first is not None and first.repair is Repair.TRUNCATED
    assert first.end is None
    (container,) = first.value
    assert container["Id"] == whole[0]["Id"]
    # Whatever was read is what the document says: no value is invented by the repair.
    for key, value in container.items():
        if not isinstance(value, dict | list):
            assert whole[0][key] == value


def test_a_cut_inside_a_string_drops_only_that_string() -> None:
    text = '[{"Id": "abc", "Name": "/web", "Image": "nvcr.io/nvi'
    first = read_first_value(text)
    assert first is not None and first.repair is Repair.TRUNCATED
    assert first.value == [{"Id": "abc", "Name": "/web"}]


def test_object_starts_name_each_container_of_an_array() -> None:
    text = '[\n {"Name": "a", "x": {"y": 1}},\n {"Name": "b"}\n]'
    first = read_first_value(text)
    assert first is not None and first.repair is None
    starts = first.object_starts()
    assert [text[s : s + 10] for s in starts] == ['{"Name": "', '{"Name": "']
    assert [json.loads(text[s:].split("\n")[0].rstrip(","))["Name"] for s in starts] == ["a", "b"]


def test_nothing_readable_is_none() -> None:
    assert read_first_value("{ not json at all") is None
    assert read_first_value("") is None


def test_every_cut_of_a_real_sample_reads_or_is_none_never_raises() -> None:
    start = json_start(GARBAGE) or 0
    for end in range(start, len(GARBAGE), 37):
        first = read_first_value(GARBAGE[:end], start)
        assert first is None or isinstance(first.value, list)


def test_a_truncated_document_with_trailing_commas_is_closed() -> None:
    cut = COMMAS[: int(len(COMMAS) * 0.7)]
    whole = read_first_value(COMMAS, json_start(COMMAS) or 0)
    first = read_first_value(cut, json_start(cut) or 0)
    assert whole is not None and first is not None and first.repair is Repair.TRUNCATED
    (container,) = first.value
    assert container["Id"] == whole.value[0]["Id"]


def test_a_truncated_document_nested_past_the_limit_keeps_what_came_before() -> None:
    text = '{"items": [{"kind": "Pod", "spec": {"nodeName": "node-05", "x": ' + '{"a": ' * 5000
    first = read_first_value(text)
    assert first is not None and first.repair is Repair.TRUNCATED
    assert first.value["items"][0]["spec"]["nodeName"] == "node-05"
