"""``StatementParser`` (the server's parse of an edited buffer) gives a module that is the text
again and facts equal to a whole-file parse's, while parsing only the statements that changed;
on odd layouts and on real transformers files with real edits."""

from __future__ import annotations

import ast
import importlib.util
import random
from pathlib import Path

import libcst
import pytest

from graphlint.checks.extract import extract_facts
from graphlint.checks.reparse import StatementParser

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

LAYOUTS = {
    "crlf": "import torch\r\n\r\n\r\n@torch.compile(mode='reduce-overhead')\r\ndef f(x):\r\n    return x.item()\r\n",
    "cr_only": "import torch\r\r@torch.compile(mode='reduce-overhead')\rdef f(x):\r    return x.item()\r",
    "no_final_newline": "import torch\n\n@torch.compile(mode='reduce-overhead')\ndef f(x):\n    return x.item()",
    "semicolons": "import torch; import numpy as np\nx = 1; y = torch.compile(lambda t: t.item(), mode='reduce-overhead')\n",
    "header_and_footer_comments": "#!/usr/bin/env python\n# header\n\n\"\"\"doc\"\"\"\nimport torch\n\n# between\n\n"
                                  "@torch.compile\n# inside the decorators\n@torch.no_grad()\ndef f(x):\n    return str(x.shape[0])\n"
                                  "    # indented, after the body\n\n# footer\n",
    "form_feed": "import torch\n\x0c\n@torch.compile(mode='reduce-overhead')\ndef f(x):\n    return x.item()\n\x0c\n",
    "continuations": "import torch\nvalue = 1 + \\\n    2\nfast = torch.compile(\n    lambda x: x.item(),\n    mode='reduce-overhead',\n)\n"
                     "s = '''\ndef not_a_statement(x):\n    return x\n'''\n",
    "main_block": "import torch\n\n\ndef f(x):\n    return x.cpu()\n\n\nif __name__ == '__main__':\n"
                  "    g = torch.compile(f, mode='reduce-overhead')\n",
    "one_statement": "import torch\n",
    "comments_only": "# nothing here\n",
    "empty": "",
    "mixed_line_breaks": "import torch\r\n\n@torch.compile(mode='reduce-overhead')\ndef f(x):\r\n    return x.item()\n",
    "crlf_and_coding": "# -*- coding: utf-8 -*-\r\nimport torch\r\n\r\nclass M(torch.nn.Module):\r\n    def forward(self, x):\r\n"
                       "        return x[x > 0]\r\n\r\nm = torch.compile(M(), mode='reduce-overhead')\r\n",
}


def assert_same(text: str, parser: StatementParser) -> None:
    module = parser(text, ast.parse(text))
    assert module.code == libcst.parse_module(text).code  # the text, but for what libcst drops (a last "\r")
    assert extract_facts(text.encode("utf-8"), parse=parser) == extract_facts(text.encode("utf-8"))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_odd_layouts(layout: str) -> None:
    parser = StatementParser()
    text = LAYOUTS[layout]
    assert_same(text, parser)
    assert_same(text + "\n\nz = 3\n", parser)


def test_only_changed_statements_are_parsed_again() -> None:
    parser = StatementParser()
    text = (SAMPLES / "static" / "crossfile" / "layers.py").read_text(encoding="utf-8")
    assert_same(text, parser)
    first = parser.parsed
    assert first == len(ast.parse(text).body)
    edited = text.replace("bias = torch.zeros(x.shape[-1])", "bias = torch.zeros(x.shape[-1], device=x.device)")
    assert_same(edited, parser)
    assert parser.parsed == first + 1  # the class that changed, nothing else
    assert_same(text, parser)  # undo: nothing to parse
    assert parser.parsed == first + 1


def transformers_files(count: int) -> list[Path]:
    spec = importlib.util.find_spec("transformers")
    assert spec is not None and spec.submodule_search_locations, "transformers is in the test extra"
    models = Path(spec.submodule_search_locations[0]) / "models"
    files = sorted(models.glob("*/modeling_*.py"))
    return files[:: max(len(files) // count, 1)][:count]


@pytest.mark.parametrize("path", transformers_files(6), ids=lambda p: p.name)
def test_real_files_with_edits(path: Path) -> None:
    parser = StatementParser()
    text = path.read_text(encoding="utf-8")
    assert_same(text, parser)
    lines = text.splitlines(keepends=True)
    chosen = random.Random(path.name)
    for _ in range(2):  # a new statement at a random line start inside a function, or a blank line
        index = chosen.randrange(1, len(lines))
        indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
        candidate = [*lines[:index], f"{indent}_edited = len(str(x.shape[0]))\n", *lines[index:]]
        try:
            ast.parse("".join(candidate))
        except SyntaxError:
            candidate = [*lines[:index], "\n", *lines[index:]]
        lines = candidate
        assert_same("".join(lines), parser)
