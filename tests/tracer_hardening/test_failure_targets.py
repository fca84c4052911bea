"""What each hostile target of samples/failures/ turns into, beyond its header: the finding's
kind, code and evidence, and the processes it started. The runs are the golden test's (cached)."""

from __future__ import annotations

import signal

from tests.tracer_hardening.conftest import FailureTrace
from tests.tracer_hardening.test_failure_samples import run_of


def findings_of(report: dict, kind: str) -> list[dict]:
    return [f for f in report["findings"] if f["kind"] == kind]


def test_segfault_is_a_crash_finding_with_the_faulthandler_stacks(failure_trace: FailureTrace) -> None:
    """(That the next stage then runs in a fresh worker is tests/tracer/test_isolation.py's.)"""
    run = run_of(failure_trace, "segfault_in_forward")
    (crash,) = findings_of(run.report, "crash")
    assert crash["stage"] == "eager" and crash["code"] == "GT005" and "SIGSEGV" in crash["message"]
    assert crash["details"]["exit_status"] == -signal.SIGSEGV
    assert "Segmentation fault" in crash["details"]["stacks"] and "in forward" in crash["details"]["stacks"]


def test_hang_is_stopped_after_the_timeout_with_stacks_and_the_targets_helper_process_is_gone(
    failure_trace: FailureTrace,
) -> None:
    run = run_of(failure_trace, "hang_in_forward")
    (hang,) = findings_of(run.report, "hang")
    assert hang["stage"] == "eager" and hang["code"] == "GT006"
    assert "did not finish within 10 s" in hang["message"]
    assert "in forward" in hang["details"]["stacks"]
    helpers = [pid for pid, cmd in run.seen.items() if "time.sleep(3600)" in cmd]
    assert helpers, "the target's helper process was never seen: the no-orphan check would prove nothing"
    assert not set(helpers) & set(run.left)


def test_memory_exhaustion_under_memory_limit_is_an_oom_finding_with_a_hint(failure_trace: FailureTrace) -> None:
    run = run_of(failure_trace, "oom_in_forward")
    (oom,) = findings_of(run.report, "oom")
    assert oom["code"] == "GT010" and oom["layer"] == "model"
    assert "allocate" in oom["message"]
    assert oom["hint"] and oom["refs"] == ["pytorch#2005"]


def test_megabytes_of_target_output_stay_out_of_the_report_and_graphlints_streams(failure_trace: FailureTrace) -> None:
    run = run_of(failure_trace, "prints_megabytes")
    assert run.status == 0 and [s["status"] for s in run.report["stages"]] == ["passed"]
    assert "still here" not in run.stdout and "warning text on stderr" not in run.stderr


def test_sys_exit_in_forward_is_a_target_exit_finding_not_a_lost_stage(failure_trace: FailureTrace) -> None:
    run = run_of(failure_trace, "exits_in_forward")
    (exit_finding,) = findings_of(run.report, "target-exit")
    assert exit_finding["code"] == "GT011" and exit_finding["message"] == "SystemExit: 3"
    assert exit_finding["details"]["exception"] == "SystemExit"
    assert findings_of(run.report, "crash") == []


def test_a_thread_left_running_neither_fails_the_stages_nor_outlives_the_trace(failure_trace: FailureTrace) -> None:
    run = run_of(failure_trace, "thread_keeps_running")
    assert run.status == 0
    assert [(s["name"], s["status"]) for s in run.report["stages"]] == [("eager", "passed"), ("dynamo", "passed")]
    assert run.left == {}


def test_a_target_that_changes_directory_still_gets_its_stages_and_static_cross_check(
    failure_trace: FailureTrace,
) -> None:
    run = run_of(failure_trace, "changes_directory")
    assert run.status == 0 and run.report["findings"] == []
    assert [s["status"] for s in run.report["stages"]] == ["passed"]
    assert run.report["static"]["error"] is None


def test_unloadable_targets_name_the_cause_on_stderr(failure_trace: FailureTrace) -> None:
    causes = {
        "raises_at_import": "FileNotFoundError",
        "factory_raises": "FileNotFoundError",
        "factory_wrong_shape": "returned Linear",
    }
    for stem, cause in causes.items():
        run = run_of(failure_trace, stem)
        assert run.status == 2 and cause in run.stderr, (stem, run.stderr[-1000:])


def test_sigkill_as_from_the_oom_killer_is_a_crash_that_points_to_memory_limit(failure_trace: FailureTrace) -> None:
    run = run_of(failure_trace, "killed_in_forward")
    (crash,) = findings_of(run.report, "crash")
    assert crash["code"] == "GT005" and crash["details"]["exit_status"] == -signal.SIGKILL
    assert "out-of-memory killer" in crash["message"] and "--memory-limit" in crash["message"]
