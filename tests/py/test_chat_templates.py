# tests/py/test_chat_templates: the committed expected renders (tests/data/chat_templates/expected/*.json,
# which the C++ test test_chat compares Bee against byte for byte) must still be what Python's jinja2
# produces for the committed templates and contexts, and must cover every template.
import importlib.util
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "chat_templates"
spec = importlib.util.spec_from_file_location("make_chat_fixtures", ROOT / "tests" / "reference" / "make_chat_fixtures.py")
fixtures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fixtures)

TEMPLATES = sorted(DATA.glob("*.jinja"))


def test_every_required_family_is_covered():
    names = " ".join(p.name for p in TEMPLATES)
    for family in ["SmolLM2", "gemma-3", "Qwen2.5", "Qwen3", "Llama-3.1", "DeepSeek-R1", "Mistral"]:
        assert family in names, family


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_template_fixture_is_current(path):
    doc = json.loads((DATA / "expected" / (path.stem + ".json")).read_text())
    assert doc["template"] == path.name and doc["now"] == fixtures.NOW
    env = fixtures.make_env()
    source = path.read_text()
    rendered_ok = 0
    for case in doc["cases"]:
        again = fixtures.render(env, source, case["context"])
        assert again == {k: case[k] for k in ("expected", "error") if k in case}, case["name"]
        rendered_ok += "expected" in case
    assert rendered_ok >= 5  # most message lists render; the rest are templates refusing them


def test_feature_fixture_is_current():
    doc = json.loads((DATA / "expected" / "features.json").read_text())
    env = fixtures.make_env()
    names = [c["name"] for c in doc["cases"]]
    assert names == [name for name, _ in fixtures.FEATURES]
    for case in doc["cases"]:
        again = fixtures.render(env, case["source"], case["context"])
        assert again == {k: case[k] for k in ("expected", "error") if k in case}, case["name"]
