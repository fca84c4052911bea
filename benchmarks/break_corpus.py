"""Static recall and precision on real graph breaks: Hugging Face models of a public corpus.

    nice -n 10 python benchmarks/break_corpus.py --corpus DIR            # truth (cached) + score
    nice -n 10 python benchmarks/break_corpus.py --corpus DIR --models BartModel T5Model
    python benchmarks/break_corpus.py --corpus DIR --score-only          # reuse the cached truth
    nice -n 10 python benchmarks/break_corpus.py --corpus DIR --score-only --trace  # graphlint trace vs the truth

``DIR`` is a copy of penguinwu/oss-model-graph-break-corpus (its ``corpus/golden_set.json``
names 790 models and whether each broke when the corpus swept them). Nothing is fetched here:
without the corpus the script says so and exits 0.

Ground truth, per model, in a subprocess of its own: the model is built from its config the way
the corpus's sweep builds it (``model_builder.py``: two layers, no weights, a batch of 2 with 32
tokens and an attention mask), in eval mode under no_grad and, when that does not break, in train
mode (``--modes``), and, fresh (never run before: lazy modules and
caches would hide breaks), goes through ``torch._dynamo.explain`` while dynamo's
``graph_breaks`` log is collected. Each break becomes (file, line, GB code, reason, the
transformers frames of its stack) at its innermost transformers frame; explain's break reasons
and the log (which also has the breaks explain leaves out: calls to skipped functions) are
merged.

Static side: one entry file per model (``model = torch.compile(Cls(config))``), each checked in
a ``graphlint check --format json`` of its own together with the transformers sources its module
reaches by imports (``source_closure``: about 200 files; the whole package would cost ten times
the parse for files no model of the run uses).
A break is *found* when a finding in a region lies on the statement of the break line (the whole
simple statement, or the header of a compound one), or, where that line is in shared code (a
check helper in ``utils``), on the statement of the innermost frame in the model's own package.
Each break gets a cause from its GB code and its source line (``CAUSE_BY_CODE``,
``ITEM_CAUSES``); causes that no static pass can know (an exception inside dynamo, a
dict-key iterator, a module built inside forward) are listed but not counted in the recall.

Every other finding in the files where the models break is an *extra*; ``break_corpus_judged.toml``
holds a verdict for each (``break`` on another input or path, ``capture`` true only under graph
capture, ``false``) with the reason, written by hand after reading the code. Unjudged extras are
printed so that they can be judged.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TRUTH_TIMEOUT = 240
CHECK_CACHE = Path(tempfile.gettempdir()) / "graphlint-break-corpus-cache"  # facts of transformers, reused
JUDGED = HERE / "break_corpus_judged.toml"

# (cause, static?) by GB code; GB0124 (.item()) is split by the source line below.
CAUSE_BY_CODE = {
    "GB0109": (".tolist()", True),
    "GB0036": ("dynamic-shape op", True),
    "GB0037": ("dynamic-shape op", True),
    "GB0246": ("dynamic-shape op", True),
    "GB0033": ("data-dependent op", True),
    "GB0170": ("data-dependent branch", True),
    "GB0035": ("data-dependent branch", True),
    "GB0291": ("logging / warnings / print", True),
    "GB0059": ("unsupported builtin / context manager", True),
    "GB0007": ("unsupported builtin / context manager", True),
    "GB0142": ("unsupported builtin / context manager", True),
    "GB0156": ("unsupported builtin / context manager", True),
    "GB4198": ("copy.deepcopy of a tensor", True),
    "GB0014": ("recurrent module (nn.LSTM/GRU/RNN) called", True),
    "GB0206": ("requires_grad set on a computed tensor", True),
    "GB8985": ("requires_grad set on a computed tensor", True),
    # Raised inside dynamo while it traces a line that raises nothing eagerly; a raise caught in
    # the same compiled code traces in torch 2.13 (dynamo.toml). No static pass can know it.
    "GB0088": ("observed exception (inside dynamo)", False),
    "GB0089": ("observed exception (inside dynamo)", False),
}
ITEM_CAUSES = (  # GB0124 by what the break line says
    (("_check_tensor_all", "torch_compilable_check", "_check("), ".item() in a check helper"),
    (("int(", "float(", "pad(", "zeros(", "ones(", "empty(", "arange(", "range("), "tensor value as a size / int"),
    ((".item()",), ".item()"),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=os.environ.get("BREAK_CORPUS"))
    parser.add_argument("--models", nargs="*", help="class names (default: the built-in choice)")
    parser.add_argument("--truth", type=Path, default=Path(tempfile.gettempdir()) / "graphlint-break-truth.json")
    parser.add_argument("--score-only", action="store_true", help="use the cached truth only")
    parser.add_argument("--truth-only", action="store_true", help="build the cached truth, score nothing")
    parser.add_argument("--trace", action="store_true",
                        help="compare graphlint trace's dynamo breaks with the truth's (break_trace.py), no static score")
    parser.add_argument("--modes", default="eval,train",
                        help="modes to try in order; a model's truth is the first that breaks (default: eval,train)")
    parser.add_argument("--truth-one", help=argparse.SUPPRESS)  # worker: NAME:MODE's truth as JSON
    args = parser.parse_args(argv)
    if args.truth_one:
        name, _, mode = args.truth_one.partition(":")
        print(json.dumps(truth_of(name, mode or "eval")))
        return 0
    modes = [m for m in args.modes.split(",") if m]
    if not modes or any(m not in ("eval", "train") for m in modes):
        parser.error(f"--modes: eval and/or train, not {args.modes!r}")
    if args.corpus is None or not (args.corpus / "corpus" / "golden_set.json").exists():
        print(f"skipped: no corpus at {args.corpus} (give --corpus: a copy of "
              "penguinwu/oss-model-graph-break-corpus)")
        return 0
    status = corpus_status(args.corpus)
    names = args.models or DEFAULT_MODELS
    truth = load_truth(args.truth)
    if not args.score_only:
        for name in names:
            if name not in truth:
                truth[name] = run_truth(name, modes)
                args.truth.write_text(json.dumps(truth, indent=1))
                print(f"truth {name}: {summary_of(truth[name])}", flush=True)
    if args.truth_only:
        return 0
    if args.trace:
        import break_trace

        break_trace.run([(name, truth[name]) for name in names if name in truth])
        return 0
    rows = [(name, truth[name], status.get(name)) for name in names if name in truth]
    report(score(rows))
    return 0


# Models of the corpus that break here (torch 2.13, transformers 5.23) with the corpus's recipe
# (model_builder.py), in the first mode that breaks: eval for the long-sequence, codec and TTS
# models, train (layer-drop, SpecAugment, requires_grad) for the speech encoders; then five the
# corpus saw break that compile whole here in both modes.
DEFAULT_MODELS = [
    "LEDModel", "LongformerModel", "ReformerModel", "EncodecModel", "MimiModel", "LongT5Model",
    "BigBirdPegasusModel", "BigBirdModel", "VitsModel", "CTRLModel",
    "Wav2Vec2Model", "HubertModel", "Data2VecAudioModel", "SEWModel", "SEWDModel", "WavLMModel",
    "UniSpeechModel", "UniSpeechSatModel", "Wav2Vec2ConformerModel", "MraModel", "ParakeetEncoder",
    "SwitchTransformersModel", "NllbMoeModel", "XcodecModel", "FastSpeech2ConformerModel",
    # broke in the corpus (torch 2.11, transformers 5.5), compile whole here
    "WhisperModel", "Speech2TextModel", "MoonshineModel", "FunnelModel", "ProphetNetModel",
]


def corpus_status(corpus: Path) -> dict[str, str]:
    data = json.loads((corpus / "corpus" / "golden_set.json").read_text())
    return {m["name"]: m["eval"]["status"] for m in data["models"]}


def load_truth(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def summary_of(entry: dict[str, Any]) -> str:
    if "error" in entry:
        return f"not built: {entry['error'][:120]}"
    return (f"{entry.get('mode', 'eval')}: {len(entry['breaks'])} break line(s), {entry['graphs']} graph(s), "
            f"{entry['seconds']:.0f}s")


def run_truth(name: str, modes: list[str]) -> dict[str, Any]:
    """The truth of the first mode in which ``name`` breaks (else of the last mode tried)."""
    entry: dict[str, Any] = {}
    for mode in modes:
        entry = _truth_in_subprocess(name, mode)
        if entry.get("breaks"):
            break
    return entry


def _truth_in_subprocess(name: str, mode: str) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--truth-one", f"{name}:{mode}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TRUTH_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {TRUTH_TIMEOUT}s"}
    lines = [l for l in done.stdout.splitlines() if l.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


# ---- ground truth (in the worker) ---------------------------------------------------------------
def truth_of(name: str, mode: str) -> dict[str, Any]:
    import logging
    import warnings

    import torch
    import transformers

    from graphlint.tracer.classify.graph_break import graph_break_code, graph_break_of_log, summarise_reason
    from graphlint.tracer.dynamo_reports import collect_dynamo_reports
    from graphlint.tracer.locate import frames_of_stack_trace, pick_user_frame
    from model_builder import build

    warnings.simplefilter("ignore")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    package = Path(transformers.__file__).parent
    user_files = {os.path.abspath(p) for p in package.rglob("*.py")}
    start = time.perf_counter()
    try:
        model, inputs = build(name, mode)  # fresh: never run before explain (lazy modules, caches)
    except Exception as exc:  # a model the builder cannot make: reported, not counted
        return {"error": f"build: {type(exc).__name__}: {exc}"}
    breaks: dict[tuple[str, int], dict[str, Any]] = {}

    def add(stack: list[tuple[str, int]], code: str | None, reason: str, source: str) -> None:
        where = pick_user_frame(stack, user_files)
        if where is None:
            return
        file, line = where
        entry = breaks.setdefault((file, line), {
            "file": file, "line": line, "codes": [], "reason": reason, "sources": [],
            "stack": [list(f) for f in stack if f[0] in user_files],
        })
        if code and code not in entry["codes"]:
            entry["codes"].append(code)
        if source not in entry["sources"]:
            entry["sources"].append(source)

    torch._dynamo.reset()
    try:
        with collect_dynamo_reports() as reports, torch.set_grad_enabled(mode == "train"):
            explained = torch._dynamo.explain(model)(**inputs)
    except Exception as exc:
        return {"error": f"run: {type(exc).__name__}: {str(exc)[:300]}"}
    for item in explained.break_reasons:
        text = str(item.reason)
        add([(os.path.abspath(f.filename), f.lineno) for f in item.user_stack], graph_break_code(text),
            summarise_reason(text), "explain")
    for message in reports.graph_breaks:
        gb = graph_break_of_log(message, user_files)
        frames = frames_of_stack_trace(message.split("User code traceback:", 1)[-1])
        if gb.file is not None and gb.line is not None:
            frames = [f for f in frames if f[0] in user_files] or [(gb.file, gb.line)]
            if frames[-1] != (gb.file, gb.line):
                frames.append((gb.file, gb.line))
            add(frames, gb.code, gb.reason, "log")
    def rel(path: str) -> str:
        return str(Path(path).relative_to(package.parent))

    relative = [
        {**b, "file": rel(b["file"]), "stack": [[rel(f), n] for f, n in b["stack"]]} for b in breaks.values()
    ]
    return {
        "class": name,
        "mode": mode,
        "module": type(model).__module__,
        "graphs": explained.graph_count,
        "breaks": relative,
        "seconds": time.perf_counter() - start,
    }


# ---- static side and scoring --------------------------------------------------------------------
def check_models(models: dict[str, str], workdir: Path, package_root: Path) -> list[dict[str, Any]]:
    """One ``graphlint check`` per model, of an entry file (``model = torch.compile(Cls(config))``,
    class name → its module) with the transformers sources it reaches: the findings in a region,
    of all models, each once. One run per model, not one for all: the analysis is
    context-insensitive, so one decorator's wrapper shared by every model's ``forward``
    (``@merge_with_config_defaults``) would carry each model to every other's region, and on 26
    models the solve ran out of its budget. The facts cache makes the shared code parsed once."""
    findings: dict[tuple[Any, ...], dict[str, Any]] = {}
    for name, module in sorted(models.items()):
        entry = workdir / f"run_{name}.py"
        entry.write_text(
            "import torch\n"
            f"from {module} import {name}\n\n"
            f"model = torch.compile({name}({name}.config_class()))\n"
        )
        command = [
            sys.executable, "-m", "graphlint", "check", "--format", "json", "-j", "1",
            "--cache-dir", str(CHECK_CACHE), str(entry), *map(str, source_closure(module, package_root)),
        ]
        done = subprocess.run(command, capture_output=True, text=True, cwd=package_root)
        report = json.loads(done.stdout)
        if report["summary"].get("notice"):
            print(f"{name}: {report['summary']['notice']}", file=sys.stderr)
        for f in report["findings"]:
            if f.get("region"):
                findings.setdefault((f["path"], f["line"], f["column"], f["code"]), f)
    return list(findings.values())


def source_closure(module: str, package_root: Path) -> list[Path]:
    """The transformers files ``module`` reaches by imports: its own model package, the modeling
    files of other models it imports from (copied-from code, without their own imports), and
    the shared code (``modeling_utils``, ``utils``, ``integrations``, ...) transitively; not the
    lazy ``transformers/__init__`` nor ``models/auto``, which import every model."""
    own = module.rsplit(".", 1)[0]
    todo, seen = [module], {}
    while todo:
        name = todo.pop()
        path = _module_file(name, package_root)
        if path is None or name in seen:
            continue
        seen[name] = path
        if name.startswith("transformers.models.") and not name.startswith(own):
            continue
        for imported in _imports(name, path):
            if imported in ("transformers", "transformers.models") or imported.startswith("transformers.models.auto"):
                continue
            if imported.startswith("transformers.models.") and not name.startswith(own):
                continue
            todo.append(imported)
    return sorted(set(seen.values()))


def _module_file(name: str, package_root: Path) -> Path | None:
    base = package_root / name.replace(".", "/")
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


@cache  # shared by every model's closure: utils and modeling_utils are parsed once
def _imports(name: str, path: Path) -> list[str]:
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - (node.level - 1)]) if node.level else ""
            full = ".".join(part for part in (base, node.module or "") if part)
            if full.startswith("transformers"):
                found += [full, *(f"{full}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.startswith("transformers")]
    return found


@cache  # asked once per break and per finding
def statement_lines(path: Path) -> dict[int, tuple[int, int]]:
    """Line → the span of the statement on it: a simple statement whole, a compound one's header."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    spans: dict[int, tuple[int, int]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        body = getattr(node, "body", None)
        end = (body[0].lineno - 1) if isinstance(body, list) and body and isinstance(body[0], ast.stmt) else node.end_lineno
        end = max(end or node.lineno, node.lineno)
        for line in range(node.lineno, end + 1):
            old = spans.get(line)
            if old is None or (end - node.lineno) < (old[1] - old[0]):
                spans[line] = (node.lineno, end)
    return spans


def _caller_in_model(brk: dict[str, Any], own_package: str) -> tuple[str, int] | None:
    """For a break whose innermost frame is in shared code (a check helper in ``utils``), the
    innermost frame in the model's own package: the statement a user would change."""
    if brk["file"].startswith(own_package):
        return None
    own = [(f, n) for f, n in brk.get("stack", []) if f.startswith(own_package)]
    return own[-1] if own else None


def cause_of(codes: list[str], source_line: str) -> tuple[str, bool]:
    for code in codes:
        if code == "GB0124":
            for needles, cause in ITEM_CAUSES:
                if any(n in source_line for n in needles):
                    return cause, True
            return ".item()", True
        if code in CAUSE_BY_CODE:
            return CAUSE_BY_CODE[code]
    return (f"other ({', '.join(codes) or 'no code'})", False)


def score(rows: list[tuple[str, dict[str, Any], str | None]]) -> dict[str, Any]:
    import transformers

    package_root = Path(transformers.__file__).parent.parent
    judged = tomllib.loads(JUDGED.read_text()) if JUDGED.exists() else {}
    verdicts = judged.get("extra", {})
    workdir = Path(tempfile.mkdtemp(prefix="graphlint-break-corpus-"))
    per_cause: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    not_static: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    models, missed, extras = [], [], {}
    seen_lines: set[tuple[str, int]] = set()
    break_statements: set[tuple[str, int]] = set()  # of every model: a line shared files break at is no extra
    candidates: dict[str, tuple[tuple[str, int], dict[str, Any]]] = {}
    checked = {name: truth["module"] for name, truth, _ in rows if "error" not in truth}
    all_findings = check_models(checked, workdir, package_root) if checked else []
    by_file: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in all_findings:
        by_file[f["path"]].append(f)
    for name, truth, status in rows:
        if "error" in truth:
            models.append({"model": name, "corpus": status, "note": summary_of(truth)})
            continue
        own_package = truth["module"].rsplit(".", 1)[0].replace(".", "/") + "/"
        break_files = {b["file"] for b in truth["breaks"]} | {truth["module"].replace(".", "/") + ".py"}
        findings = [f for f in all_findings if f["path"] in break_files]
        found = 0
        for brk in truth["breaks"]:
            path = package_root / brk["file"]
            spans = statement_lines(path)
            first, last = spans.get(brk["line"], (brk["line"], brk["line"]))
            break_statements.add((brk["file"], first))
            source = path.read_text(encoding="utf-8").splitlines()[brk["line"] - 1]
            cause, static = cause_of(brk["codes"], source)
            hit = [f for f in by_file.get(brk["file"], []) if first <= f["line"] <= last]
            caller = _caller_in_model(brk, own_package)
            if caller is not None and not hit:  # torch_compilable_check(...) called from the model
                caller_first, caller_last = statement_lines(package_root / caller[0]).get(caller[1], (caller[1], caller[1]))
                hit = [f for f in by_file.get(caller[0], []) if caller_first <= f["line"] <= caller_last]
            key = (brk["file"], brk["line"])
            if key not in seen_lines:  # a line shared by copied models counts once
                seen_lines.add(key)
                (per_cause if static else not_static)[cause][1] += 1
                (per_cause if static else not_static)[cause][0] += bool(hit)
                if static and not hit:
                    missed.append(f"{brk['file']}:{brk['line']} [{cause}] {source.strip()[:90]}")
            found += bool(hit)
        for f in findings:
            spans = statement_lines(package_root / f["path"])
            first = spans.get(f["line"], (f["line"], f["line"]))[0]
            candidates[f"{f['path']}:{f['line']}:{f['code']}"] = ((f["path"], first), f)
        models.append({
            "model": name, "corpus": status, "graphs": truth["graphs"], "breaks": len(truth["breaks"]),
            "found": found, "findings": len(findings),
        })
    extras = {key: f for key, (statement, f) in candidates.items() if statement not in break_statements}
    judged_extras = Counter(verdicts.get(k, {}).get("verdict", "unjudged") for k in extras)
    return {"models": models, "per_cause": dict(per_cause), "not_static": dict(not_static), "missed": missed, "extras": extras,
            "judged": judged_extras, "verdicts": verdicts}


def report(result: dict[str, Any]) -> None:
    print("\n| model | corpus | graphs | break lines | found | findings |\n|---|---|---|---|---|---|")
    for m in result["models"]:
        if "note" in m:
            print(f"| {m['model']} | {m['corpus']} | {m['note']} | | | |")
        else:
            print(f"| {m['model']} | {m['corpus']} | {m['graphs']} | {m['breaks']} | {m['found']} | {m['findings']} |")
    print("\n| cause (distinct break lines) | found statically |\n|---|---|")
    total = [0, 0]
    for cause, (hit, count) in sorted(result["per_cause"].items(), key=lambda kv: -kv[1][1]):
        print(f"| {cause} | {hit}/{count} |")
        total[0] += hit
        total[1] += count
    if total[1]:
        print(f"| **all static causes** | **{total[0]}/{total[1]} = {total[0] / total[1]:.2f}** |")
    for cause, (hit, count) in sorted(result["not_static"].items()):
        print(f"| {cause} (not static: not counted) | {hit}/{count} |")
    print("\nmissed:")
    for line in result["missed"]:
        print("  ", line)
    judged = result["judged"]
    true_ = judged.get("break", 0) + judged.get("capture", 0)
    decided = true_ + judged.get("false", 0)
    print(f"\nextras: {sum(judged.values())} ({dict(judged)}); precision on judged: "
          f"{true_}/{decided}" + (f" = {true_ / decided:.2f}" if decided else ""))
    for key, f in sorted(result["extras"].items()):
        verdict = result["verdicts"].get(key, {}).get("verdict", "UNJUDGED")
        print(f"   {verdict:9} {key} {f['message'][:100]}")


if __name__ == "__main__":
    raise SystemExit(main())
