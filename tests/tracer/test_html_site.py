"""The trace report as HTML: the site in --dump (index.html, a page per graph), the
self-contained page of --format html, and both as a browser shows them (headless Chromium:
a real screenshot, no console errors, nothing wider than 1280 px)."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from tests.tracer.conftest import run_cli

SAMPLE = "samples/trace/str_on_symint.py"  # a graph break: 4 dynamo graphs, each translated by torchair
WIDTH = 1280
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--enable-logging=stderr", "--v=0", "--hide-scrollbars",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, torch_npu_wheel: Path) -> Path:
    folder = tmp_path_factory.mktemp("site")
    status, _, err = run_cli("trace", SAMPLE, "--dump", str(folder), "--torchair", str(torch_npu_wheel))
    assert status == 1, err
    return folder


def _numbers(folder: Path, pattern: str) -> set[int]:
    return {int(m.group(1)) for p in folder.iterdir() if (m := re.fullmatch(pattern, p.name))}


def test_dynamo_aot_and_ge_graphs_share_their_numbers(site: Path) -> None:
    dynamo = _numbers(site / "dynamo", r"graph_(\d+)\.py")
    assert dynamo == {0, 1, 2, 3}
    assert _numbers(site / "aot", r"graph_(\d+)_forward\.py") == dynamo
    assert _numbers(site / "torchair", r"graph_(\d+)\.original\.pbtxt") == dynamo
    assert _numbers(site / "graphs", r"graph_(\d+)\.html") == dynamo


def test_the_index_has_ladder_failures_frames_graphs_and_environment(site: Path) -> None:
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "aria-label='stage ladder'" in index and index.count("<rect") >= 5
    failures = index.split("id=failures", 1)[1].split("id=findings", 1)[0]
    report = json.loads((site / "report.json").read_text(encoding="utf-8"))
    (code,) = [f["code"] for f in report["findings"] if f["kind"] == "graph-break"]  # GB0059; 2.14: GB6053
    assert code in failures and "GT003" in failures
    assert f"https://meta-pytorch.github.io/compile-graph-break-site/gb/{code.lower()}.html" in index
    assert "<mark>❱   21          key = &quot;batch_&quot; + str(batch)</mark>" in index  # the code frame
    for number in range(4):
        assert f"<a href='graphs/graph_{number}.html'>graph_{number}</a>" in index
        assert f"href='torchair/graph_{number}.original.pbtxt'" in index
    assert re.search(r"<tr><th class=nowrap>torch</th><td>2\.\d+", index)  # environment as a table
    assert "<h2 id=copies>Copies</h2>" in index and "<svg" in index.split("id=copies", 1)[1]
    assert "<script" not in index


def test_every_link_of_the_site_resolves(site: Path) -> None:
    pages = [site / "index.html", site / "report.html", *(site / "graphs").glob("*.html")]
    for page in pages:
        for href in re.findall(r"href='([^']+)'", page.read_text(encoding="utf-8")):
            if href.startswith(("#", "https://")):
                continue
            assert (page.parent / href).resolve().is_file(), f"{page.name}: {href}"


def test_a_graph_page_shows_each_file_inline(site: Path) -> None:
    page = (site / "graphs" / "graph_0.html").read_text(encoding="utf-8")
    for relative in ("dynamo/graph_0.py", "aot/graph_0_forward.py", "torchair/graph_0.original.pbtxt"):
        assert f"href='../{relative}'" in page
    assert "class GraphModule" in page and "op {" in page  # the FX code and the GE GraphDef text


def test_format_html_is_one_self_contained_page(site: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    status, stdout, _ = run_cli("trace", SAMPLE, "--stages", "eager,dynamo", "--format", "html", "-o", str(out))
    assert status == 1 and stdout == ""
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert not [h for h in re.findall(r"(?:href|src)='([^']+)'", page) if not h.startswith(("#", "https://"))]


def _chromium() -> str:
    found = os.environ.get("GRAPHLINT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("headless Chromium is needed to view the report: apt-get install chromium (.ci/run installs it)")
    return found


def _browse(page: Path, tmp_path: Path, *action: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    profile.mkdir()
    command = [_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={WIDTH},2400", *action, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def _console_messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def _png_pixels(path: Path) -> tuple[int, int, bytes]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    chunks, offset = [], 8
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset : offset + 8])
        if kind == b"IDAT":
            chunks.append(data[offset + 8 : offset + 8 + length])
        offset += 12 + length
    return width, height, zlib.decompress(b"".join(chunks))


def test_the_console_check_sees_an_error(tmp_path: Path) -> None:
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>console.error('report broke')</script></body></html>")
    run = _browse(page, tmp_path, "--dump-dom")
    assert any("report broke" in line for line in _console_messages(run.stderr))


@pytest.mark.parametrize("name", ["index.html", "graphs/graph_1.html"])
def test_chromium_shows_the_page_without_errors_within_1280px(name: str, site: Path, tmp_path: Path) -> None:
    page = site / name
    shot = tmp_path / "shot.png"
    run = _browse(page, tmp_path, f"--screenshot={shot}")
    assert run.returncode == 0, run.stderr[-2000:]
    assert _console_messages(run.stderr) == []
    width, height, pixels = _png_pixels(shot)
    assert (width, height) == (WIDTH, 2400)
    assert len(set(pixels)) > 20  # text, colours and lines, not a blank page
    # How wide the laid-out page is: a copy of it beside it that writes its scroll width.
    probe = page.with_name(f"probe-{page.name}")
    probe.write_text(
        page.read_text(encoding="utf-8").replace(
            "</body>", "<script>document.body.dataset.width = document.documentElement.scrollWidth</script></body>"
        ),
        encoding="utf-8",
    )
    dom = _browse(probe, tmp_path, "--dump-dom").stdout
    probe.unlink()
    laid_out = int(re.search(r'data-width="(\d+)"', dom).group(1))
    assert laid_out <= WIDTH
