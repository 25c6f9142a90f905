"""The tolerant XML reader: strict when it can, a rebuilt tree from broken or cut-off XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from crashlens.text.tolerant_xml import parse_xml, read_tolerant

from conftest import SAMPLES, sample_text

QX_SAMPLES = sorted(p.name for p in (SAMPLES / "nvidia_smi").glob("qx_*.xml"))
T4 = sample_text("nvidia_smi/qx_tesla-t4.xml")


def paths(element: ET.Element, prefix: str = "") -> set[str]:
    """Every element path with its stripped text, as `a/b/c=text`."""
    found = set()
    for child in element:
        path = f"{prefix}/{child.tag}"
        found.add(f"{path}={(child.text or '').strip()}")
        found |= paths(child, path)
    return found


@pytest.mark.parametrize("name", QX_SAMPLES)
def test_well_formed_samples_go_through_the_strict_parser(name: str) -> None:
    root, error = parse_xml(sample_text(f"nvidia_smi/{name}"))
    assert error is None
    assert root is not None and root.tag == "nvidia_smi_log"


@pytest.mark.parametrize("name", QX_SAMPLES)
def test_on_whole_samples_the_tolerant_tree_equals_the_strict_one(name: str) -> None:
    text = sample_text(f"nvidia_smi/{name}")
    strict = ET.fromstring(text)
    tolerant = read_tolerant(text)
    assert tolerant is not None
    assert paths(tolerant) == paths(strict)


@pytest.mark.parametrize("fraction", [0.1, 0.45, 0.9])
def test_a_truncated_sample_keeps_every_element_before_the_cut(fraction: float) -> None:
    cut = T4[: int(len(T4) * fraction)]
    root, error = parse_xml(cut)
    assert error is not None  # the strict parser's message, for the caller's warning
    assert root is not None and root.tag == "nvidia_smi_log"
    # Every element whose closing tag made it into the cut is there, with its text.
    complete = ET.fromstring(T4)
    expected = {f"/{el.tag}={(el.text or '').strip()}" for el in complete if f"</{el.tag}>" in cut}
    assert expected
    assert expected <= {p for p in paths(root) if p.count("/") == 1}
    assert root.findtext("driver_version") == "515.105.01"


def test_unclosed_elements_are_closed_at_the_end() -> None:
    root = read_tolerant("<log><gpu id='0'><name>T4</name><memory><used>12 MiB")
    assert root is not None
    assert root.find("gpu") is not None and root.find("gpu").get("id") == "0"  # type: ignore[union-attr]
    assert root.findtext("gpu/name") == "T4"
    assert root.findtext("gpu/memory/used") == "12 MiB"


def test_stray_close_tags_are_ignored_and_a_mismatch_closes_the_inner_elements() -> None:
    root = read_tolerant("<a><b>1</c></b><d><e>2</d><f>3</f></a>")
    assert root is not None
    assert root.findtext("b") == "1"
    assert root.findtext("d/e") == "2"
    # `</d>` closed the still-open `<e>` too, so `<f>` is `<a>`'s child.
    assert root.findtext("f") == "3"


def test_deep_nesting_with_stray_closes_and_split_text_keeps_the_tree() -> None:
    # Found by the fuzz campaign: 20,000 open tags then as many stray closes made every close
    # scan the whole stack (17 s; now linear). Text split by comments is joined in order.
    depth = 20_000
    root = read_tolerant("<a>" * depth + "</b>" * depth + "<c>" + "x<!-- -->" * 1000 + "y")
    assert root is not None and root.tag == "a"
    element, seen = root, 1
    while len(element):
        element, seen = element[0], seen + 1
    assert seen == depth + 1 and element.tag == "c"
    assert element.text == "x" * 1000 + "y"


def test_entities_attributes_comments_and_declarations() -> None:
    text = (
        '<?xml version="1.0"?>\n<!DOCTYPE log SYSTEM "x.dtd">\n<!-- note <b>not a tag</b> -->'
        "<log a=\"1\" b='two'><msg>x &lt; y &amp;&amp; z</msg><empty/></log>"
    )
    root = read_tolerant(text)
    assert root is not None and root.attrib == {"a": "1", "b": "two"}
    assert root.findtext("msg") == "x < y && z"
    assert root.find("empty") is not None and root.find("b") is None


def test_only_the_first_root_is_kept() -> None:
    root = read_tolerant("junk before <one><x>1</x></one> junk <two><y>2</y></two>")
    assert root is not None and root.tag == "one"
    assert root.find("y") is None and root.text is None


@pytest.mark.parametrize("text", ["", "no tags here", "</closing>", "<", "<<>>", "<!-- only -->"])
def test_no_element_is_none_and_never_raises(text: str) -> None:
    root, error = parse_xml(text)
    assert root is None and error is not None
