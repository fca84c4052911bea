"""Bad files: each becomes a clear message or a ``GL000`` finding, and the other files of the
run are still reported (``good.py`` carries one known finding in every test)."""

from __future__ import annotations

import ctypes
import os

import pytest

from tests.checks_hardening.cli import CAPTURE_SYNC, CAPTURE_SYNC_FINDING, graphlint_check, write_tree

GOOD = {"good.py": CAPTURE_SYNC}


def assert_good_file_reported(run) -> None:
    assert run.by_path()["good.py"] == [CAPTURE_SYNC_FINDING]


def parse_errors(run) -> dict[str, list[int]]:
    return {f["path"]: [f["line"], f["column"]] for f in run.findings("GL000")}


def test_non_utf8_file_is_gl000_at_its_line(tmp_path):
    write_tree(tmp_path, {**GOOD, "latin.py": b"x = 1\ny = 2\nname = '\xe9t\xe9'\n"})
    run = graphlint_check(".", cwd=tmp_path)
    assert run.returncode == 1
    assert_good_file_reported(run)
    [error] = run.findings("GL000")
    assert error["path"] == "latin.py" and error["line"] == 3
    assert "UTF-8" in error["message"]


def test_file_with_encoding_cookie_is_linted(tmp_path):
    """PEP 263: a declared encoding is valid Python; its findings are reported, not a GL000."""
    source = "# -*- coding: latin-1 -*-\n# r\xe9sum\xe9\n" + CAPTURE_SYNC
    write_tree(tmp_path, {**GOOD, "cookie.py": source.encode("latin-1")})
    run = graphlint_check(".", cwd=tmp_path)
    assert_good_file_reported(run)
    assert run.by_path()["cookie.py"] == [("GL202", 8, 12)]


@pytest.mark.parametrize(
    "name, encode",
    [
        ("bom", lambda text: b"\xef\xbb\xbf" + text.encode()),
        ("crlf", lambda text: text.replace("\n", "\r\n").encode()),
        ("bom_crlf", lambda text: b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode()),
    ],
)
def test_bom_and_crlf_files_report_the_same_positions(tmp_path, name, encode):
    write_tree(tmp_path, {**GOOD, f"{name}.py": encode(CAPTURE_SYNC)})
    run = graphlint_check(".", cwd=tmp_path)
    assert run.returncode == 1
    assert run.by_path() == {"good.py": [CAPTURE_SYNC_FINDING], f"{name}.py": [CAPTURE_SYNC_FINDING]}


FIXABLE = """\
import torch


@torch.compile(mode="reduce-overhead")
def step(x):
    return torch.zeros(3).to(x.device) + x  # graphlint: ignore[GL203]
"""
FIXED = FIXABLE.replace("torch.zeros(3).to(x.device)", "torch.zeros(3, device=x.device)")


@pytest.mark.parametrize("prefix, newline", [(b"", "\r\n"), (b"\xef\xbb\xbf", "\n"), (b"\xef\xbb\xbf", "\r\n")])
def test_fix_keeps_line_endings_and_bom(tmp_path, prefix, newline):
    write_tree(tmp_path, {"model.py": prefix + FIXABLE.replace("\n", newline).encode()})
    run = graphlint_check("--fix", ".", cwd=tmp_path)
    assert run.returncode == 0, run.stdout
    assert (tmp_path / "model.py").read_bytes() == prefix + FIXED.replace("\n", newline).encode()


def generated_module(megabytes: float) -> str:
    """What code generators write: a serialized descriptor on one line (protobuf's ``_pb2``,
    most of the bytes), then thousands of small generated functions."""
    descriptor = "DESCRIPTOR = b'" + "\\x0a\\x12" * int(megabytes * 2**20 * 0.94 / 8) + "'\n"
    functions = []
    size = len(descriptor)
    index = 0
    while size < megabytes * 2**20:
        block = f"\n\ndef generated_{index}(x, y):\n    z = x * {index} + y\n    return z.sum(dim={index % 3})\n"
        functions.append(block)
        size += len(block)
        index += 1
    return "import torch\n" + descriptor + "".join(functions)


def test_five_megabyte_generated_file(tmp_path):
    source = generated_module(5) + "\n\n" + CAPTURE_SYNC.split("\n\n\n", 1)[1]
    assert len(source) >= 5 * 2**20
    last_line = source.count("\n")
    write_tree(tmp_path, {**GOOD, "generated_pb2.py": source})
    run = graphlint_check(".", cwd=tmp_path, timeout=300)
    assert_good_file_reported(run)
    assert run.by_path()["generated_pb2.py"] == [("GL202", last_line, 12)]


DEEP = 2000
DEEPLY_NESTED = {
    "parentheses": "x = " + "(" * DEEP + "1" + ")" * DEEP + "\n",
    "lists": "x = " + "[" * DEEP + "]" * DEEP + "\n",
    "calls": "x = " + "f(" * DEEP + ")" * DEEP + "\n",
    "dicts": "x = " + "{1: " * DEEP + "1" + "}" * DEEP + "\n",
    "blocks": "".join(" " * i + "if x:\n" for i in range(DEEP)) + " " * DEEP + "pass\n",
    "operator_chain": "x = " + " + ".join(["1"] * 100 * DEEP) + "\n",
    "attribute_chain": "x = a" + ".b" * 10 * DEEP + "\n",
    "unary_chain": "x = " + "-" * 10 * DEEP + "1\n",
}


@pytest.mark.parametrize("shape", sorted(DEEPLY_NESTED))
def test_deep_nesting_is_gl000(tmp_path, shape):
    """Python itself refuses these (nesting limits, recursion in its parser); libcst's native
    parser overflowed its stack on deep brackets (a segfault) and took minutes on long chains."""
    write_tree(tmp_path, {**GOOD, "deep.py": DEEPLY_NESTED[shape]})
    run = graphlint_check(".", cwd=tmp_path, timeout=60)
    assert_good_file_reported(run)
    [error] = run.findings("GL000")
    assert error["path"] == "deep.py"
    assert "internal error" not in error["message"]
    assert run.returncode == 1


def test_directory_symlink_loop(tmp_path):
    write_tree(tmp_path, {**GOOD, "pkg/model.py": CAPTURE_SYNC})
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "pkg" / "self").symlink_to(".", target_is_directory=True)
    run = graphlint_check(".", cwd=tmp_path, timeout=60)
    assert run.by_path() == {"good.py": [CAPTURE_SYNC_FINDING], "pkg/model.py": [CAPTURE_SYNC_FINDING]}


def test_dangling_symlink_named_like_a_module(tmp_path):
    write_tree(tmp_path, GOOD)
    (tmp_path / "gone.py").symlink_to(tmp_path / "deleted.py")
    run = graphlint_check(".", cwd=tmp_path)
    assert_good_file_reported(run)
    [error] = run.findings("GL000")
    assert "cannot read" in error["message"]


def test_fifo_named_like_a_module_does_not_block(tmp_path):
    write_tree(tmp_path, GOOD)
    os.mkfifo(tmp_path / "pipe.py")
    run = graphlint_check(".", cwd=tmp_path, timeout=60)
    assert_good_file_reported(run)


def _without_root_file_access() -> None:
    """Run as root without the capabilities that bypass file permissions, so that mode 000
    holds (Linux ``prctl``; as any other user it holds anyway)."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    pr_capbset_drop, cap_dac_override, cap_dac_read_search = 24, 1, 2
    for capability in (cap_dac_override, cap_dac_read_search):
        if libc.prctl(pr_capbset_drop, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_unreadable_file_is_gl000(tmp_path):
    write_tree(tmp_path, {**GOOD, "secret.py": CAPTURE_SYNC})
    (tmp_path / "secret.py").chmod(0)
    run = graphlint_check("--no-cache", ".", cwd=tmp_path, preexec_fn=_without_root_file_access)
    assert_good_file_reported(run)
    [error] = run.findings("GL000")
    assert error["path"] == "secret.py" and "Permission denied" in error["message"]


def test_missing_path_is_named_and_the_rest_still_reported(tmp_path):
    write_tree(tmp_path, GOOD)
    run = graphlint_check("good.py", "no_such_file.py", cwd=tmp_path)
    assert "no_such_file.py" in run.stderr and "no such file" in run.stderr.lower()
    assert_good_file_reported(run)
    assert run.returncode == 2  # a usage error outranks findings


def test_only_missing_paths_check_nothing(tmp_path):
    write_tree(tmp_path, GOOD)
    run = graphlint_check("no_such_dir", cwd=tmp_path)
    assert run.returncode == 2 and "no_such_dir" in run.stderr
    assert run.stdout == ""


def test_a_parser_process_killed_by_a_signal_costs_only_its_file(tmp_path, monkeypatch):
    """No known file kills libcst's native parser since Python's parser vets it first; should
    one ever do (or the OOM killer strike), the pool must not hang or lose the other files."""
    import signal

    from graphlint.checks import collect
    from graphlint.checks.extract import ExtractOptions

    real = collect.extract_facts

    def dies_on_marked_files(source: bytes, options: ExtractOptions):
        if b"KILL_THE_PARSER" in source:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(source, options)

    monkeypatch.setattr(collect, "extract_facts", dies_on_marked_files)  # inherited by forked workers
    files = [tmp_path / f"module_{i:02}.py" for i in range(collect.SERIAL_BELOW + 6)]
    for index, path in enumerate(files):
        path.write_text(CAPTURE_SYNC + ("# KILL_THE_PARSER\n" if index == 7 else ""), encoding="utf-8")

    facts = collect.collect_facts(files, ExtractOptions(), cache=None, jobs=2)

    assert set(facts) == set(files)
    killed = {path.name for path, found in facts.items() if found.error is not None}
    assert killed == {"module_07.py"} and facts[files[7]].internal
    expected = real(CAPTURE_SYNC.encode(), ExtractOptions())
    assert all(found == expected for path, found in facts.items() if path != files[7])
