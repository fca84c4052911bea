"""The release as users meet it: one version everywhere, a changelog entry for it, the
pre-commit snippet's `rev:` naming its tag, and the check JSON as docs/check-json.md says."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from graphlint import __version__
from graphlint.cli import main

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]


def test_one_version_a_changelog_entry_and_the_snippets_tag() -> None:
    assert tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"] == __version__
    releases = re.findall(r"^## (\d+\.\d+\.\d+)", (REPO / "CHANGELOG.md").read_text(), re.M)
    assert releases and releases[0] == __version__
    for snippet in (REPO / "README.md", REPO / ".pre-commit-hooks.yaml"):
        assert set(re.findall(r"rev: (v\S+)", snippet.read_text())) == {f"v{__version__}"}, snippet


def test_the_check_json_is_as_documented(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    doc = (REPO / "docs" / "check-json.md").read_text()
    documented = json.loads(re.search(r"```json\n(.*?)```", doc, re.S).group(1))
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "m.py").write_text(
        "import torch\n\n@torch.compile(mode='reduce-overhead')\ndef f(x):\n    return x + torch.arange(3).to(x.device)\n"
    )
    assert main(["check", "--no-cache", "--format", "json", str(tmp_path / "m.py")]) == 1
    real = json.loads(capsys.readouterr().out)
    assert list(real) == list(documented)
    assert list(real["summary"]) == list(documented["summary"])
    assert list(real["findings"][0]) == list(documented["findings"][0])
    assert list(real["findings"][0]["region"]) == list(documented["findings"][0]["region"])
    for field in documented["findings"][0]:
        assert f"`{field}`" in doc, field
